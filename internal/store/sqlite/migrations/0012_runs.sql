-- 0012: the dashboard lists a group's runs in a project, newest first, a
-- page at a time (RunRecent): a range of this index read backwards from
-- the page's cursor, instead of every run of the project sorted.
CREATE INDEX runs_recent ON runs (project_id, group_id, id);
