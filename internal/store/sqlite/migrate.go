package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations returns the embedded migrations in order.
func Migrations() ([]store.Migration, error) { return store.LoadMigrations(migrations, "migrations") }

// migrate applies the migrations the mode allows, each in its own
// transaction. BEGIN IMMEDIATE takes the write lock before the version is
// read, so two processes migrating one file at once apply each step once.
// With existing, a database without a schema is store.ErrNoDatabase and is
// not touched.
func migrate(ctx context.Context, conn *sql.Conn, mode store.MigrateMode, existing bool) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	if existing {
		var version int
		var tables int
		err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'").Scan(&tables)
		if err == nil && tables > 0 {
			err = conn.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&version)
		}
		if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if version == 0 {
			return fmt.Errorf("%w: the file has no Continuo schema", store.ErrNoDatabase)
		}
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL) STRICT`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	for {
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return err
		}
		var current int
		if err := conn.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&current); err != nil {
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
			return fmt.Errorf("read schema version: %w", err)
		}
		todo, err := store.PlanMigration(ms, current, mode)
		if err != nil || len(todo) == 0 {
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
			return err
		}
		m := todo[0]
		if err := apply(ctx, conn, m); err != nil {
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
			return fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
		}
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			return fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
		}
		mode = store.MigrateUp // a fresh database takes every step
	}
}

func apply(ctx context.Context, conn *sql.Conn, m store.Migration) error {
	if _, err := conn.ExecContext(ctx, m.SQL); err != nil {
		return err
	}
	_, err := conn.ExecContext(ctx, "INSERT INTO schema_migrations (version, name) VALUES (?, ?)", m.Version, m.Name)
	return err
}

// backfill indexes the rows written before migration 0002
// (sqlstore.Backfill), one transaction per batch.
func backfill(ctx context.Context, conn *sql.Conn) error {
	for {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("index search text: %w", err)
		}
		n, err := sqlstore.Backfill(ctx, tx, dialect{})
		if err == nil {
			err = tx.Commit()
		} else {
			_ = tx.Rollback()
		}
		if err != nil {
			return fmt.Errorf("index search text: %w", err)
		}
		if n == 0 {
			return nil
		}
	}
}
