package store_test

// The two drivers' schemas are one logical schema written twice. These tests
// hold them to each other, to store.Tables and to the root package's closed
// sets and ID prefixes: every `CHECK (col IN (…))` of both dialects lists
// the same values, an enum column's CHECK lists exactly its root set, in
// order, and an id column's CHECK (id LIKE …) names its prefix from id.go. They read
// the migration files (a small parser below) and the real schemas that the
// drivers create (SQLite always, PostgreSQL per pgtest's rules).

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/pgtest"
	"github.com/continuo-dev/continuo/internal/store/postgres"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
	"github.com/jackc/pgx/v5"
)

// migrationsTable is created by each driver's migration runner, not by a
// migration file, and is not exported (store.Tables).
const migrationsTable = "schema_migrations"

// rootSets are the enum columns and the closed set each must allow, as SQL
// literals, in the root package's order.
var rootSets = map[string][]string{
	"messages.kind":             literals(continuo.Kinds()),
	"messages.status":           literals(continuo.Statuses()),
	"messages.priority":         literals(continuo.Priorities()),
	"sessions.mode":             literals(continuo.Modes()),
	"sessions.lifecycle":        literals(continuo.Lifecycles()),
	"grants.access":             literals(continuo.Accesses()),
	"oauth_clients.kind":        literals(continuo.ClientKinds()),
	"oauth_clients.auth_method": literals(continuo.AuthMethods()),
	"oauth_tokens.kind":         literals(continuo.TokenKinds()),
	"goals.lifecycle":           literals(continuo.GoalLifecycles()),
	"runs.kind":                 literals(continuo.RunKinds()),
	"runs.state":                literals(continuo.RunStates()),
	"run_events.kind":           literals(continuo.RunEventKinds()),
	"swarms.state":              literals(swarmStates),
	"workers.carrier_source":    literals(carrierSources),
	"workers.carrier_state":     literals(carrierStates),
	"workers.state":             literals(workerStates),
	"workers.continuity_state":  literals(continuityStates),
	"carriers.source":           literals(carrierSources),
	"carriers.state":            literals(carrierRowStates),
	"tasks.state":               literals(continuo.TaskStates()),
	"attempts.state":            literals(attemptStates),
	"continuations.state":       literals(continuo.ContinuationStates()),
	"context_ledger.source":     literals(continuo.LedgerSources()),
}

// The closed sets of swarm.go that it does not list itself, in its order.
var (
	swarmStates      = []continuo.SwarmState{continuo.SwarmActive, continuo.SwarmClosed}
	workerStates     = []continuo.WorkerState{continuo.WorkerIdle, continuo.WorkerBusy}
	carrierSources   = []continuo.CarrierSource{continuo.CarrierFromMeta, continuo.CarrierFromSession, continuo.CarrierFromKey}
	carrierStates    = []continuo.CarrierState{continuo.CarrierActive, continuo.CarrierLost, continuo.CarrierRetired}
	carrierRowStates = []continuo.CarrierState{continuo.CarrierActive, continuo.CarrierRetired} // a carrier row is never lost
	continuityStates = continuo.ContinuityStates()
	attemptStates    = []continuo.AttemptState{continuo.AttemptClaimed, continuo.AttemptRunning, continuo.AttemptSubmitted,
		continuo.AttemptFailed, continuo.AttemptCancelled, continuo.AttemptInDoubt, continuo.AttemptRequeued, continuo.AttemptSettled}
)

// idPrefixes are the tables whose id column carries a root package prefix
// (id.go), which its CHECK (id LIKE '…\_%' ESCAPE '\') must name.
var idPrefixes = map[string]string{
	"groups":        continuo.PrefixGroup,
	"principals":    continuo.PrefixPrincipal,
	"tokens":        continuo.PrefixToken,
	"projects":      continuo.PrefixProject,
	"sessions":      continuo.PrefixSession,
	"messages":      continuo.PrefixMessage,
	"oauth_clients": continuo.PrefixOAuthClient,
	"oauth_grants":  continuo.PrefixOAuthGrant,
	"oauth_codes":   continuo.PrefixOAuthCode,
	"oauth_tokens":  continuo.PrefixOAuthToken,
	"login_links":   continuo.PrefixLoginLink,
	"web_sessions":  continuo.PrefixWebSession,
	"goals":         continuo.PrefixGoal,
	"runs":          continuo.PrefixRun,
	"swarms":        continuo.PrefixSwarm,
	"workers":       continuo.PrefixWorker,
	"tasks":         continuo.PrefixTask,
	"attempts":      continuo.PrefixAttempt,
	"continuations": continuo.PrefixContinuation,
}

func literals[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "'" + strings.ReplaceAll(string(x), "'", "''") + "'"
	}
	return out
}

// dialects are the drivers' migrations, by name.
func dialects(t *testing.T) map[string][]store.Migration {
	t.Helper()
	lite, err := sqlite.Migrations()
	if err != nil {
		t.Fatalf("sqlite.Migrations: %v", err)
	}
	pg, err := postgres.Migrations()
	if err != nil {
		t.Fatalf("postgres.Migrations: %v", err)
	}
	return map[string][]store.Migration{"sqlite": lite, "postgres": pg}
}

func TestMigrationsMatch(t *testing.T) {
	ds := dialects(t)
	steps := func(ms []store.Migration) []string {
		var out []string
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%04d_%s", m.Version, m.Name))
		}
		return out
	}
	for name, ms := range ds {
		if len(ms) != store.SchemaVersion {
			t.Errorf("%s: %d migrations, store.SchemaVersion is %d", name, len(ms), store.SchemaVersion)
		}
	}
	if a, b := steps(ds["sqlite"]), steps(ds["postgres"]); !slices.Equal(a, b) {
		t.Errorf("the drivers' migrations differ:\n  sqlite:   %v\n  postgres: %v", a, b)
	}
}

func TestSchemaChecksMatch(t *testing.T) {
	schemas := map[string]*schema{}
	for name, ms := range dialects(t) {
		schemas[name] = parseMigrations(t, name, ms)
	}
	lite, pg := schemas["sqlite"], schemas["postgres"]
	if len(lite.checks) == 0 || len(pg.checks) == 0 {
		t.Fatalf("no CHECK (… IN (…)) found (sqlite %d, postgres %d): the parser is broken", len(lite.checks), len(pg.checks))
	}
	// (a) the two dialects allow the same values in the same columns.
	compareChecks(t, "sqlite migrations", lite.checks, "postgres migrations", pg.checks)
	// (b) enum columns allow exactly their root set, in its order.
	for _, name := range []string{"sqlite", "postgres"} {
		s := schemas[name]
		for col, want := range rootSets {
			got, ok := s.checks[col]
			switch {
			case !ok:
				t.Errorf("%s: %s has no CHECK (%s IN (…)); want %v", name, col, column(col), want)
			case !slices.Equal(got, want):
				t.Errorf("%s: %s: CHECK lists %v, the root package's set is %v (same values, same order)", name, col, got, want)
			}
		}
		// Other references to an enum column's values (a constraint's
		// `lifecycle = 'closed'`, a partial index's WHERE) name allowed values.
		for _, r := range s.refs {
			if set, ok := s.checks[r.col]; ok && !slices.Contains(set, r.value) {
				t.Errorf("%s: %s: %s = %s, which its CHECK does not allow (%v)", name, r.where, r.col, r.value, set)
			}
		}
	}
}

// TestSchemaIDPrefixes: every id column's CHECK names its root prefix, in
// both dialects, and no table has a prefix check the test does not know.
func TestSchemaIDPrefixes(t *testing.T) {
	for name, ms := range dialects(t) {
		s := parseMigrations(t, name, ms)
		for _, table := range sorted(append(keys(idPrefixes), keys(s.prefixes)...)) {
			want, known := idPrefixes[table]
			got, ok := s.prefixes[table]
			switch {
			case !known:
				t.Errorf("%s: table %s checks its id prefix %q; add the table to idPrefixes", name, table, got)
			case !ok:
				t.Errorf("%s: table %s has no CHECK (id LIKE '%s…'); want prefix %q", name, table, want, want)
			case got != want:
				t.Errorf("%s: table %s: CHECK (id LIKE …) names prefix %q, id.go says %q", name, table, got, want)
			}
		}
	}
}

func TestSchemaTablesMatch(t *testing.T) {
	want := sorted(store.Tables)
	for name, ms := range dialects(t) {
		s := parseMigrations(t, name, ms)
		if got := sorted(s.tables); !slices.Equal(got, want) {
			t.Errorf("%s migrations create tables %v,\nstore.Tables has %v", name, got, want)
		}
	}
	if len(sorted(store.Tables)) != len(store.Tables) {
		t.Errorf("store.Tables lists a table twice: %v", store.Tables)
	}
	if slices.Contains(store.Tables, migrationsTable) {
		t.Errorf("store.Tables has %s, which the runners own", migrationsTable)
	}
}

// TestRealSchemaSQLite checks the schema a fresh SQLite database really gets:
// its tables are store.Tables and schema_migrations, and its CHECKs are the
// ones parsed from the migration files.
func TestRealSchemaSQLite(t *testing.T) {
	db := readSQLite(t)
	checkRealTables(t, "sqlite", db)
	compareChecks(t, "sqlite database", db.checks, "sqlite migrations", parseMigrations(t, "sqlite", dialects(t)["sqlite"]).checks)
}

// TestRealSchemaPostgres checks a fresh PostgreSQL schema the same way, and
// that every table has the same columns, in the same order, as in SQLite.
func TestRealSchemaPostgres(t *testing.T) {
	db := readPostgres(t)
	checkRealTables(t, "postgres", db)
	compareChecks(t, "postgres database", db.checks, "postgres migrations", parseMigrations(t, "postgres", dialects(t)["postgres"]).checks)
	lite := readSQLite(t)
	for _, table := range sorted(append(keys(db.columns), keys(lite.columns)...)) {
		if a, b := lite.columns[table], db.columns[table]; !slices.Equal(a, b) {
			t.Errorf("table %s: columns differ:\n  sqlite:   %v\n  postgres: %v", table, a, b)
		}
	}
}

func checkRealTables(t *testing.T, name string, db *dbSchema) {
	t.Helper()
	want := sorted(append(slices.Clone(store.Tables), migrationsTable))
	if got := sorted(keys(db.columns)); !slices.Equal(got, want) {
		t.Errorf("a fresh %s database has tables %v,\nwant store.Tables and %s: %v", name, got, migrationsTable, want)
	}
	for table, cols := range db.columns {
		if len(cols) == 0 {
			t.Errorf("%s: table %s: no columns read", name, table)
		}
	}
}

// compareChecks reports every column whose allowed values differ between
// two readings of the schema.
func compareChecks(t *testing.T, aName string, a map[string][]string, bName string, b map[string][]string) {
	t.Helper()
	for _, col := range sorted(append(keys(a), keys(b)...)) {
		va, oka := a[col]
		vb, okb := b[col]
		switch {
		case !oka:
			t.Errorf("%s: CHECK (%s IN %v) only in %s", col, column(col), vb, bName)
		case !okb:
			t.Errorf("%s: CHECK (%s IN %v) only in %s", col, column(col), va, aName)
		case !slices.Equal(va, vb):
			t.Errorf("%s: CHECK values differ:\n  %s: %v\n  %s: %v", col, aName, va, bName, vb)
		}
	}
}

// ---- the real schemas ----

// dbSchema is what a real database says about itself.
type dbSchema struct {
	columns map[string][]string // table → column names in order
	checks  map[string][]string // "table.column" → IN values, as literals
}

func readSQLite(t *testing.T) *dbSchema {
	t.Helper()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "schema.db")
	db, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	conn, err := sql.Open("sqlite", "file:"+path+"?mode=ro") // registered by the sqlite package
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, `SELECT name, sql FROM sqlite_master
		WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	out := &dbSchema{columns: map[string][]string{}}
	var ddl []string
	// A virtual table (the FTS5 word index of messages) and its shadow
	// tables (name_data, name_idx, …) are an index kept by triggers, not
	// data: PostgreSQL has a GIN index there, and no export carries them.
	var virtual []string
	type table struct{ name, ddl string }
	var tables []table
	for rows.Next() {
		var name, text string
		if err := rows.Scan(&name, &text); err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile(`(?is)^CREATE\s+VIRTUAL\s+TABLE\b`).MatchString(text) {
			virtual = append(virtual, name)
			continue
		}
		tables = append(tables, table{name, text})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	for _, tb := range tables {
		if slices.ContainsFunc(virtual, func(v string) bool { return strings.HasPrefix(tb.name, v+"_") }) {
			continue
		}
		out.columns[tb.name] = nil
		ddl = append(ddl, tb.ddl)
	}
	for table := range out.columns {
		cols, err := conn.QueryContext(ctx, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, table)
		if err != nil {
			t.Fatal(err)
		}
		for cols.Next() {
			var c string
			if err := cols.Scan(&c); err != nil {
				t.Fatal(err)
			}
			out.columns[table] = append(out.columns[table], c)
		}
		if err := cols.Err(); err != nil {
			t.Fatal(err)
		}
		cols.Close()
	}
	// SQLite keeps each table's CREATE statement as written: parse it as a
	// migration.
	out.checks = parseMigrations(t, "sqlite database", []store.Migration{{Version: 1, Name: "sqlite_master", SQL: strings.Join(ddl, ";\n")}}).checks
	return out
}

func readPostgres(t *testing.T) *dbSchema {
	t.Helper()
	ctx := t.Context()
	url := pgtest.Schema(t)
	db, err := postgres.Open(ctx, url, nil)
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	out := &dbSchema{columns: map[string][]string{}, checks: map[string][]string{}}
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range tables {
		rows, err := conn.Query(ctx, `SELECT column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, table)
		if err != nil {
			t.Fatal(err)
		}
		if out.columns[table], err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			t.Fatal(err)
		}
	}
	// PostgreSQL keeps a CHECK (col IN (…)) as col = ANY (ARRAY[…]).
	rows, err = conn.Query(ctx, `SELECT r.relname, pg_get_constraintdef(c.oid) FROM pg_constraint c
		JOIN pg_class r ON r.oid = c.conrelid JOIN pg_namespace n ON n.oid = r.relnamespace
		WHERE c.contype = 'c' AND n.nspname = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	defs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Table, Def string }])
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		m := pgAnyRE.FindStringSubmatch(d.Def)
		if m == nil {
			if strings.Contains(d.Def, "ANY") {
				t.Errorf("postgres database: table %s: cannot read %s", d.Table, d.Def)
			}
			continue
		}
		var vals []string
		items, err := splitLiterals(m[2])
		if err != nil {
			t.Errorf("postgres database: table %s: %s: %v", d.Table, d.Def, err)
			continue
		}
		for _, it := range items {
			// 'x'::text → 'x'; (0)::bigint → 0.
			it = pgCastRE.ReplaceAllString(it, "")
			it = strings.TrimSuffix(strings.TrimPrefix(it, "("), ")")
			vals = append(vals, it)
		}
		key := d.Table + "." + m[1]
		if _, dup := out.checks[key]; dup {
			t.Errorf("postgres database: %s has two IN checks", key)
		}
		out.checks[key] = vals
	}
	return out
}

var (
	pgAnyRE  = regexp.MustCompile(`^CHECK \(\(\(?"?(\w+)"?\)? = ANY \(\(?ARRAY\[(.*)\]\)?(?:::\w+\[\])?\)\)\)$`)
	pgCastRE = regexp.MustCompile(`::[a-z ]+$`)
)

// ---- the migration files ----

// schema is what a dialect's migrations create, applied in order.
type schema struct {
	tables   []string            // in creation order
	checks   map[string][]string // "table.column" → IN values, as literals
	prefixes map[string]string   // table → the ID prefix its id column's CHECK names
	refs     []ref
}

// ref is a column compared with a string literal, outside its IN check.
type ref struct {
	col, value, where string
}

var (
	createTableRE = regexp.MustCompile(`(?is)^CREATE\s+(?:TEMP(?:ORARY)?\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"?(\w+)"?\s*\(`)
	dropTableRE   = regexp.MustCompile(`(?is)^DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?"?(\w+)"?`)
	renameTableRE = regexp.MustCompile(`(?is)^ALTER\s+TABLE\s+"?(\w+)"?\s+RENAME\s+TO\s+"?(\w+)"?\s*$`)
	renameColRE   = regexp.MustCompile(`(?is)^ALTER\s+TABLE\s+"?(\w+)"?\s+RENAME\s+(?:COLUMN\s+)?"?(\w+)"?\s+TO\s+"?(\w+)"?\s*$`)
	addColumnRE   = regexp.MustCompile(`(?is)^ALTER\s+TABLE\s+"?(\w+)"?\s+ADD\s+`)
	// PostgreSQL's name of a column's CHECK, dropped to be replaced.
	dropCheckRE   = regexp.MustCompile(`(?is)^ALTER\s+TABLE\s+"?(\w+)"?\s+DROP\s+CONSTRAINT\s+"?(\w+)_check"?\s*$`)
	alterTableRE  = regexp.MustCompile(`(?is)^ALTER\s+TABLE\s+"?(\w+)"?`)
	createIndexRE = regexp.MustCompile(`(?is)^CREATE\s+(?:UNIQUE\s+)?INDEX\s+.*?\bON\s+"?(\w+)"?`)
	inCheckRE     = regexp.MustCompile(`(?is)\bCHECK\s*\(\s*"?(\w+)"?\s+IN\s*\(([^()]*)\)\s*\)`)
	anyInRE       = regexp.MustCompile(`(?is)\bIN\s*\(`)
	eqLiteralRE   = regexp.MustCompile(`(?s)\b(\w+)\s*=\s*('(?:[^']|'')*')`)
	// CHECK (id LIKE 'grp\_%' ESCAPE '\'): the prefix, its _ escaped.
	idPrefixRE = regexp.MustCompile(`(?is)\bid\s+\w+\s+PRIMARY\s+KEY\s+CHECK\s*\(\s*id\s+LIKE\s+'([a-z]+)\\_%'\s+ESCAPE\s+'\\'\s*\)`)
)

// parseMigrations applies the DDL of ms, in order, to an empty schema: the
// tables it creates and the values each CHECK (col IN (…)) allows. A
// statement it does not understand but that could change either fails the
// test, so that a new kind of migration teaches the parser rather than
// slipping past it.
func parseMigrations(t *testing.T, dialect string, ms []store.Migration) *schema {
	t.Helper()
	s := &schema{checks: map[string][]string{}, prefixes: map[string]string{}}
	for _, m := range ms {
		stmts, err := statements(m.SQL)
		if err != nil {
			t.Fatalf("%s: migration %04d_%s: %v", dialect, m.Version, m.Name, err)
		}
		for _, st := range stmts {
			where := fmt.Sprintf("%s %04d_%s: %.60q", dialect, m.Version, m.Name, st)
			if err := s.apply(st, where); err != nil {
				t.Errorf("%s: %v", where, err)
			}
		}
	}
	return s
}

func (s *schema) apply(st, where string) error {
	switch {
	case createTableRE.MatchString(st):
		table := createTableRE.FindStringSubmatch(st)[1]
		if slices.Contains(s.tables, table) {
			return fmt.Errorf("table %s created twice", table)
		}
		s.tables = append(s.tables, table)
		if m := idPrefixRE.FindStringSubmatch(st); m != nil {
			s.prefixes[table] = m[1] + "_"
		}
		return s.addChecks(table, st, where)
	case dropTableRE.MatchString(st):
		table := dropTableRE.FindStringSubmatch(st)[1]
		s.tables = slices.DeleteFunc(s.tables, func(x string) bool { return x == table })
		delete(s.prefixes, table)
		for col := range s.checks {
			if tableOf(col) == table {
				delete(s.checks, col)
			}
		}
	case renameTableRE.MatchString(st):
		m := renameTableRE.FindStringSubmatch(st)
		if i := slices.Index(s.tables, m[1]); i >= 0 {
			s.tables[i] = m[2]
		}
		if p, ok := s.prefixes[m[1]]; ok {
			delete(s.prefixes, m[1])
			s.prefixes[m[2]] = p
		}
		for col, vals := range s.checks {
			if tableOf(col) == m[1] {
				delete(s.checks, col)
				s.checks[m[2]+"."+column(col)] = vals
			}
		}
	case renameColRE.MatchString(st):
		m := renameColRE.FindStringSubmatch(st)
		if vals, ok := s.checks[m[1]+"."+m[2]]; ok {
			delete(s.checks, m[1]+"."+m[2])
			s.checks[m[1]+"."+m[3]] = vals
		}
	case dropCheckRE.MatchString(st):
		// A column's CHECK named as PostgreSQL names it: table_column_check.
		m := dropCheckRE.FindStringSubmatch(st)
		col, ok := strings.CutPrefix(m[2], m[1]+"_")
		if _, has := s.checks[m[1]+"."+col]; !ok || !has {
			return fmt.Errorf("the schema test knows no CHECK called %s_check", m[2])
		}
		delete(s.checks, m[1]+"."+col)
	case addColumnRE.MatchString(st):
		return s.addChecks(addColumnRE.FindStringSubmatch(st)[1], st, where)
	case alterTableRE.MatchString(st):
		if regexp.MustCompile(`(?i)\b(CHECK|CONSTRAINT|TYPE)\b`).MatchString(st) {
			return fmt.Errorf("the schema test cannot follow this ALTER TABLE; teach it (internal/store/schema_test.go)")
		}
	case createIndexRE.MatchString(st):
		s.addRefs(createIndexRE.FindStringSubmatch(st)[1], st, where)
	default:
		if regexp.MustCompile(`(?i)\bCHECK\b`).MatchString(st) {
			return fmt.Errorf("a CHECK the schema test cannot place; teach it (internal/store/schema_test.go)")
		}
	}
	return nil
}

// addChecks records the IN checks of a CREATE TABLE or ALTER TABLE … ADD.
func (s *schema) addChecks(table, st, where string) error {
	var errs []error
	found := inCheckRE.FindAllStringSubmatch(st, -1)
	if n := len(anyInRE.FindAllString(st, -1)); n != len(found) {
		errs = append(errs, fmt.Errorf("table %s: %d IN lists, %d of them of the form CHECK (col IN (…)); teach the schema test the others", table, n, len(found)))
	}
	for _, m := range found {
		key := table + "." + m[1]
		if _, dup := s.checks[key]; dup {
			errs = append(errs, fmt.Errorf("%s has two IN checks", key))
			continue
		}
		vals, err := splitLiterals(m[2])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", key, err))
			continue
		}
		s.checks[key] = vals
	}
	s.addRefs(table, inCheckRE.ReplaceAllString(st, ""), where)
	return errors.Join(errs...)
}

func (s *schema) addRefs(table, st, where string) {
	for _, m := range eqLiteralRE.FindAllStringSubmatch(st, -1) {
		s.refs = append(s.refs, ref{col: table + "." + m[1], value: m[2], where: where})
	}
}

var numberRE = regexp.MustCompile(`^-?[0-9]+$`)

// splitLiterals splits a comma-separated list of SQL literals: quoted
// strings ('a', a quote doubled inside) or integers, each kept as written.
func splitLiterals(list string) ([]string, error) {
	var out []string
	for rest := strings.TrimSpace(list); ; {
		var item string
		if strings.HasPrefix(rest, "'") {
			end := 1
			for {
				i := strings.IndexByte(rest[end:], '\'')
				if i < 0 {
					return nil, fmt.Errorf("unterminated string in %q", list)
				}
				end += i + 1
				if !strings.HasPrefix(rest[end:], "'") {
					break
				}
				end++ // '' is a quote
			}
			// A cast (PostgreSQL's 'x'::text) belongs to the item.
			tail := rest[end:]
			cut := strings.IndexByte(tail, ',')
			if cut < 0 {
				cut = len(tail)
			}
			item, rest = rest[:end]+strings.TrimSpace(tail[:cut]), tail[cut:]
		} else {
			cut := strings.IndexByte(rest, ',')
			if cut < 0 {
				cut = len(rest)
			}
			item, rest = strings.TrimSpace(rest[:cut]), rest[cut:]
			bare := strings.TrimSuffix(strings.TrimPrefix(pgCastRE.ReplaceAllString(item, ""), "("), ")")
			if !numberRE.MatchString(bare) {
				return nil, fmt.Errorf("%q is not a string or integer literal", item)
			}
		}
		out = append(out, item)
		rest = strings.TrimSpace(rest)
		if rest == "" {
			return out, nil
		}
		if !strings.HasPrefix(rest, ",") {
			return nil, fmt.Errorf("expected a comma in %q", list)
		}
		rest = strings.TrimSpace(rest[1:])
	}
}

// statements splits SQL into statements at semicolons, dropping comments
// (-- to the end of the line, /* … */) outside quotes ('…' and "…").
func statements(src string) ([]string, error) {
	var out []string
	var b strings.Builder
	flush := func() {
		if st := strings.TrimSpace(b.String()); st != "" {
			out = append(out, st)
		}
		b.Reset()
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for ; j < len(src); j++ {
				if src[j] == c {
					if j+1 < len(src) && src[j+1] == c {
						j++ // doubled quote
						continue
					}
					break
				}
			}
			if j >= len(src) {
				return nil, fmt.Errorf("unterminated %c quote", c)
			}
			b.WriteString(src[i : j+1])
			i = j
		case c == '-' && strings.HasPrefix(src[i:], "--"):
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				i = len(src)
			} else {
				i += j - 1
			}
			b.WriteByte(' ')
		case c == '/' && strings.HasPrefix(src[i:], "/*"):
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return nil, fmt.Errorf("unterminated /* comment")
			}
			i += j + 3
			b.WriteByte(' ')
		case c == ';':
			flush()
		default:
			b.WriteByte(c)
		}
	}
	flush()
	return out, nil
}

// ---- helpers ----

func tableOf(col string) string { t, _, _ := strings.Cut(col, "."); return t }
func column(col string) string  { _, c, _ := strings.Cut(col, "."); return c }

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// sorted returns the distinct values of xs, sorted.
func sorted(xs []string) []string {
	out := slices.Clone(xs)
	sort.Strings(out)
	return slices.Compact(out)
}
