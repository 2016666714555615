-- 0004: Continuo's OAuth 2.1 authorization server and browser sign-in.
-- Tables only: nothing older changes. Times are INTEGER unix milliseconds
-- (UTC), set by the caller. Every secret (client secret, code, token, login
-- link, browser session) is stored only as its hash. Scopes are
-- space-separated like tokens.scopes; redirect_uris is a JSON array.

-- A client: a Client ID Metadata Document (kind metadata, client_id its
-- URL, the document cached here so every replica shares it) or a
-- dynamically registered client (kind registered, client_id issued).
-- Public clients (auth_method none) have no secret; confidential ones do.
CREATE TABLE oauth_clients (
    id            TEXT PRIMARY KEY CHECK (id LIKE 'ocl\_%' ESCAPE '\'),
    client_id     TEXT NOT NULL UNIQUE,
    kind          TEXT NOT NULL CHECK (kind IN ('metadata', 'registered')),
    name          TEXT NOT NULL,
    redirect_uris TEXT NOT NULL CHECK (json_valid(redirect_uris)),
    auth_method   TEXT NOT NULL CHECK (auth_method IN ('none', 'client_secret_post', 'client_secret_basic')),
    secret_hash   TEXT,
    scopes        TEXT NOT NULL,
    metadata      TEXT NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    fetched_at    INTEGER,
    refresh_at    INTEGER,
    used_at       INTEGER,
    revoked_at    INTEGER,
    CONSTRAINT secret_iff_confidential CHECK ((auth_method = 'none') = (secret_hash IS NULL))
) STRICT;

-- Registration's flood bound counts and prunes the unused registered
-- clients: this index holds only them.
CREATE INDEX oauth_clients_unused ON oauth_clients (created_at) WHERE kind = 'registered' AND used_at IS NULL;

-- One authorization a principal gave a client: one refresh family.
CREATE TABLE oauth_grants (
    id           TEXT PRIMARY KEY CHECK (id LIKE 'ogr\_%' ESCAPE '\'),
    client_id    TEXT NOT NULL REFERENCES oauth_clients (id),
    principal_id TEXT NOT NULL REFERENCES principals (id),
    scopes       TEXT NOT NULL,
    resource     TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    revoked_at   INTEGER
) STRICT;

CREATE INDEX oauth_grants_client ON oauth_grants (client_id);

-- An authorization code; grant_id is the grant its exchange created.
CREATE TABLE oauth_codes (
    id             TEXT PRIMARY KEY CHECK (id LIKE 'ocd\_%' ESCAPE '\'),
    hash           TEXT NOT NULL UNIQUE,
    client_id      TEXT NOT NULL REFERENCES oauth_clients (id),
    principal_id   TEXT NOT NULL REFERENCES principals (id),
    scopes         TEXT NOT NULL,
    redirect_uri   TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    resource       TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    used_at        INTEGER,
    grant_id       TEXT REFERENCES oauth_grants (id)
) STRICT;

CREATE INDEX oauth_codes_client ON oauth_codes (client_id);

-- Access and refresh tokens of a grant.
CREATE TABLE oauth_tokens (
    id         TEXT PRIMARY KEY CHECK (id LIKE 'otk\_%' ESCAPE '\'),
    hash       TEXT NOT NULL UNIQUE,
    grant_id   TEXT NOT NULL REFERENCES oauth_grants (id),
    kind       TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER,
    revoked_at INTEGER
) STRICT;

CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);

-- Single-use sign-in links the operator makes for a principal.
CREATE TABLE login_links (
    id           TEXT PRIMARY KEY CHECK (id LIKE 'lnk\_%' ESCAPE '\'),
    hash         TEXT NOT NULL UNIQUE,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    used_at      INTEGER
) STRICT;

-- Signed-in browsers (the session cookie's hash).
CREATE TABLE web_sessions (
    id           TEXT PRIMARY KEY CHECK (id LIKE 'wss\_%' ESCAPE '\'),
    hash         TEXT NOT NULL UNIQUE,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    revoked_at   INTEGER
) STRICT;
