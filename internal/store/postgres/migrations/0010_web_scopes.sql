-- 0010: a browser session acts with the scopes of what signed it in (the
-- dashboard's actions need more than reading). A login link carries the
-- scopes the operator gave it; a session signed in with a personal access
-- token carries the token's scopes and its ID, and ends with the token.
-- Rows from before read as they did: sessions:read, no token.
ALTER TABLE login_links ADD COLUMN scopes text NOT NULL DEFAULT 'sessions:read';
ALTER TABLE web_sessions ADD COLUMN scopes text NOT NULL DEFAULT 'sessions:read';
ALTER TABLE web_sessions ADD COLUMN token_id text NOT NULL DEFAULT '';
