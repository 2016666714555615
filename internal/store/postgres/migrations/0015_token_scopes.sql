-- 0015: an access token a refresh narrowed (RFC 6749 §6: a refresh may
-- ask for fewer scopes than its grant) holds its own scopes, space-separated
-- like every scopes column; '' (every token before, and every token no
-- refresh narrowed) holds the grant's. The grant stays the ceiling: a later
-- refresh may ask for any of the grant's scopes again.
ALTER TABLE oauth_tokens ADD COLUMN scopes text NOT NULL DEFAULT '';
