-- 0016: a validation run's source fingerprint may take files by size and
-- modification time instead of content (issue 23: a file too large to read
-- within one call); the run records which ones, as JSON {"paths": [...],
-- "total": N}, '' when every file was read.
ALTER TABLE runs ADD COLUMN source_stat text NOT NULL DEFAULT '';
