// Package pgtest gives tests a private, empty place in a real PostgreSQL
// server.
//
// The server comes from CONTINUO_TEST_POSTGRES_URL (see [BaseURL]): without
// it the tests that need PostgreSQL are skipped, except under CI=true, where
// they fail, so that CI cannot pass without having run them.
//
// There are three helpers, all safe to call from parallel tests, and all
// removing what they made when the test ends (t.Cleanup):
//
//   - [Database] creates a whole new database (CREATE DATABASE ... TEMPLATE
//     template0) and returns its URL. Use it when a test needs the database to
//     itself: when it runs two server processes against one database, uses
//     database-wide state (advisory locks, LISTEN/NOTIFY, ALTER DATABASE
//     settings, pg_stat_* views, objects outside one schema), or checks
//     database-wide settings. It costs about ten times as much as [Schema]:
//     tens of milliseconds to create and about ten to drop, against a few in
//     all for a schema, on a local server (go test -bench . measures it).
//
//   - [Schema] creates a new schema in the database of the base URL and
//     returns a URL whose connections have search_path set to it (as a
//     runtime parameter in the URL query, honoured by pgx, pgxpool and
//     database/sql through pgx/v5/stdlib). Every unqualified name then
//     resolves in that schema, so a migration run through the URL creates
//     its tables there. It is cheaper and suffices for store conformance
//     tests, which only create and use tables, but it isolates only the
//     objects in the schema: advisory locks, LISTEN channels and
//     database-level settings are shared with every other test using the
//     same base database.
//
//   - [Copy] creates a whole new database as a copy of a template made by
//     [Template] (once per key, kept on the server for later runs): a
//     migrated database in tens of milliseconds where migrating it takes a
//     second under -race.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable holding the URL of the test server.
const EnvURL = "CONTINUO_TEST_POSTGRES_URL"

// prefix starts the name of every database and schema made here, so that
// leftovers of killed test runs are easy to find and drop.
const prefix = "continuo_t_"

// timeout bounds each administrative statement (create, drop).
const timeout = 2 * time.Minute

// BaseURL returns the URL of the PostgreSQL server for tests, from
// CONTINUO_TEST_POSTGRES_URL. If that is unset or empty it skips the test, or
// fails it when CI=true.
func BaseURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CONTINUO_TEST_POSTGRES_URL is not set: CI requires PostgreSQL")
		}
		t.Skip("CONTINUO_TEST_POSTGRES_URL is not set: skipping the PostgreSQL test")
	}
	return u
}

// Database creates a fresh, empty database with a unique name on the server
// of [BaseURL], drops it when the test ends (terminating connections still
// open to it), and returns its URL: the base URL with the database replaced.
func Database(t testing.TB) string {
	t.Helper()
	base := BaseURL(t)
	name := uniqueName(t)
	ident := pgx.Identifier{name}.Sanitize()
	admin(t, base, "CREATE DATABASE "+ident+" TEMPLATE template0")
	t.Cleanup(func() { admin(t, base, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)") })
	u, err := withParam(base, "dbname", name)
	if err != nil {
		t.Fatalf("pgtest: %s: %v", EnvURL, err)
	}
	return u
}

// Copy creates a database with a unique name as a copy of template (CREATE
// DATABASE ... TEMPLATE, a file copy on the server: tens of milliseconds),
// drops it when the test ends, and returns its URL, as [Database] does.
// Make template with [Template].
func Copy(t testing.TB, template string) string {
	t.Helper()
	base := BaseURL(t)
	name := uniqueName(t)
	ident := pgx.Identifier{name}.Sanitize()
	admin(t, base, "CREATE DATABASE "+ident+" TEMPLATE "+pgx.Identifier{template}.Sanitize())
	t.Cleanup(func() { admin(t, base, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)") })
	u, err := withParam(base, "dbname", name)
	if err != nil {
		t.Fatalf("pgtest: %s: %v", EnvURL, err)
	}
	return u
}

// Template returns the name of a database for [Copy] on the server of
// [BaseURL]: prefix, "template_" and key, made by build (given its URL)
// unless it exists. It is kept for later test binaries, so key must name
// what build puts in it (a hash of it), so that a change makes another.
// Processes making one at once take turns (an advisory lock); it gets its
// name only once build has returned, so a build cut short is never copied.
func Template(t testing.TB, key string, build func(ctx context.Context, url string) error) string {
	t.Helper()
	base := BaseURL(t)
	name := prefix + "template_" + key
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", EnvURL, err)
	}
	defer conn.Close(context.Background())
	// A session lock: released when conn closes, however this ends.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext($1))", name); err != nil {
		t.Fatalf("pgtest: lock %s: %v", name, err)
	}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if exists {
		return name
	}
	wip := pgx.Identifier{name + "_wip"}.Sanitize()
	for _, q := range []string{"DROP DATABASE IF EXISTS " + wip + " WITH (FORCE)", "CREATE DATABASE " + wip + " TEMPLATE template0"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("pgtest: %s: %v", q, err)
		}
	}
	u, err := withParam(base, "dbname", name+"_wip")
	if err != nil {
		t.Fatalf("pgtest: %s: %v", EnvURL, err)
	}
	if err := build(ctx, u); err != nil {
		t.Fatalf("pgtest: build the template %s: %v", name, err)
	}
	// No connection of build's may be left (the server waits a few seconds
	// for them to end), as a copy will need.
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+wip+" RENAME TO "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: publish the template %s: %v", name, err)
	}
	return name
}

// Schema creates a uniquely named, empty schema in the database of [BaseURL],
// drops it (CASCADE) when the test ends, and returns a URL whose connections
// use it: the base URL with search_path set to the schema.
func Schema(t testing.TB) string {
	t.Helper()
	base := BaseURL(t)
	name := uniqueName(t)
	ident := pgx.Identifier{name}.Sanitize()
	admin(t, base, "CREATE SCHEMA "+ident)
	t.Cleanup(func() { admin(t, base, "DROP SCHEMA IF EXISTS "+ident+" CASCADE") })
	// The name is lower-case letters, digits and underscores, so it needs no
	// quoting inside search_path.
	u, err := withParam(base, "search_path", name)
	if err != nil {
		t.Fatalf("pgtest: %s: %v", EnvURL, err)
	}
	return u
}

// uniqueName returns prefix followed by 16 random lower-case hex digits.
func uniqueName(t testing.TB) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("pgtest: random name: %v", err)
	}
	return prefix + hex.EncodeToString(b[:])
}

// admin runs one statement on its own connection to connURL.
func admin(t testing.TB, connURL, sql string) {
	t.Helper()
	// Not t.Context(): it is already canceled when cleanups run.
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, connURL)
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", EnvURL, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// withParam returns connStr with one connection parameter set: dbname
// (the path of a URL) or a runtime parameter (a query parameter of a URL).
// Keyword/value connection strings are supported too: a later keyword
// overrides an earlier one.
func withParam(connStr, key, value string) (string, error) {
	if !strings.HasPrefix(connStr, "postgres://") && !strings.HasPrefix(connStr, "postgresql://") {
		return connStr + " " + key + "=" + value, nil
	}
	u, err := url.Parse(connStr)
	if err != nil {
		return "", err
	}
	if key == "dbname" {
		u.Path = "/" + value
		u.RawPath = ""
		q := u.Query()
		if q.Has("dbname") {
			q.Del("dbname")
			u.RawQuery = q.Encode()
		}
		return u.String(), nil
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
