-- 0004: Continuo's OAuth 2.1 authorization server and browser sign-in.
-- Tables only: nothing older changes. Times are bigint unix milliseconds
-- (UTC), set by the caller. Every secret (client secret, code, token, login
-- link, browser session) is stored only as its hash. Scopes are
-- space-separated like tokens.scopes; redirect_uris is a JSON array.
--
-- PostgreSQL translation of internal/store/sqlite/migrations/0004_oauth.sql:
-- same tables, columns (in the same order), constraints and indexes.

-- A client: a Client ID Metadata Document (kind metadata, client_id its
-- URL, the document cached here so every replica shares it) or a
-- dynamically registered client (kind registered, client_id issued).
-- Public clients (auth_method none) have no secret; confidential ones do.
CREATE TABLE oauth_clients (
    id            text PRIMARY KEY CHECK (id LIKE 'ocl\_%' ESCAPE '\'),
    client_id     text NOT NULL UNIQUE,
    kind          text NOT NULL CHECK (kind IN ('metadata', 'registered')),
    name          text NOT NULL,
    redirect_uris text NOT NULL CHECK (redirect_uris::json IS NOT NULL),
    auth_method   text NOT NULL CHECK (auth_method IN ('none', 'client_secret_post', 'client_secret_basic')),
    secret_hash   text,
    scopes        text NOT NULL,
    metadata      text NOT NULL DEFAULT '',
    created_at    bigint NOT NULL,
    fetched_at    bigint,
    refresh_at    bigint,
    used_at       bigint,
    revoked_at    bigint,
    CONSTRAINT secret_iff_confidential CHECK ((auth_method = 'none') = (secret_hash IS NULL))
);

-- Registration's flood bound counts and prunes the unused registered
-- clients: this index holds only them.
CREATE INDEX oauth_clients_unused ON oauth_clients (created_at) WHERE kind = 'registered' AND used_at IS NULL;

-- One authorization a principal gave a client: one refresh family.
CREATE TABLE oauth_grants (
    id           text PRIMARY KEY CHECK (id LIKE 'ogr\_%' ESCAPE '\'),
    client_id    text NOT NULL REFERENCES oauth_clients (id),
    principal_id text NOT NULL REFERENCES principals (id),
    scopes       text NOT NULL,
    resource     text NOT NULL,
    created_at   bigint NOT NULL,
    revoked_at   bigint
);

CREATE INDEX oauth_grants_client ON oauth_grants (client_id);

-- An authorization code; grant_id is the grant its exchange created.
CREATE TABLE oauth_codes (
    id             text PRIMARY KEY CHECK (id LIKE 'ocd\_%' ESCAPE '\'),
    hash           text NOT NULL UNIQUE,
    client_id      text NOT NULL REFERENCES oauth_clients (id),
    principal_id   text NOT NULL REFERENCES principals (id),
    scopes         text NOT NULL,
    redirect_uri   text NOT NULL,
    code_challenge text NOT NULL,
    resource       text NOT NULL,
    created_at     bigint NOT NULL,
    expires_at     bigint NOT NULL,
    used_at        bigint,
    grant_id       text REFERENCES oauth_grants (id)
);

CREATE INDEX oauth_codes_client ON oauth_codes (client_id);

-- Access and refresh tokens of a grant.
CREATE TABLE oauth_tokens (
    id         text PRIMARY KEY CHECK (id LIKE 'otk\_%' ESCAPE '\'),
    hash       text NOT NULL UNIQUE,
    grant_id   text NOT NULL REFERENCES oauth_grants (id),
    kind       text NOT NULL CHECK (kind IN ('access', 'refresh')),
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    used_at    bigint,
    revoked_at bigint
);

CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);

-- Single-use sign-in links the operator makes for a principal.
CREATE TABLE login_links (
    id           text PRIMARY KEY CHECK (id LIKE 'lnk\_%' ESCAPE '\'),
    hash         text NOT NULL UNIQUE,
    principal_id text NOT NULL REFERENCES principals (id),
    created_at   bigint NOT NULL,
    expires_at   bigint NOT NULL,
    used_at      bigint
);

-- Signed-in browsers (the session cookie's hash).
CREATE TABLE web_sessions (
    id           text PRIMARY KEY CHECK (id LIKE 'wss\_%' ESCAPE '\'),
    hash         text NOT NULL UNIQUE,
    principal_id text NOT NULL REFERENCES principals (id),
    created_at   bigint NOT NULL,
    expires_at   bigint NOT NULL,
    revoked_at   bigint
);
