package store

import "context"

// TableTx reads and writes whole rows, for export and import: the one
// format that moves a database between drivers (dump.go).
type TableTx interface {
	// TableRows calls fn with every row of one of Tables, in primary-key
	// order, as column name → value (int64, string or nil).
	TableRows(ctx context.Context, table string, fn func(row map[string]any) error) error
	// TableInsert inserts one row into one of Tables. Column names are
	// checked against the table's real columns.
	TableInsert(ctx context.Context, table string, row map[string]any) error
}

// Tables are the tables an export carries, parents before children, so
// that an import can insert them in this order. Every table of every
// driver's schema is here, except schema_migrations (the schema version
// travels in the export's header); a test checks both schemas against it.
var Tables = []string{"meta", "groups", "principals", "tokens", "projects", "grants",
	"sessions", "session_instructions", "messages", "idempotency",
	"oauth_clients", "oauth_grants", "oauth_codes", "oauth_tokens", "login_links", "web_sessions",
	"goals", "goal_plans", "runs", "run_events", "evidence",
	"swarms", "workers", "carriers", "tasks", "attempts",
	"continuations", "context_ledger"}
