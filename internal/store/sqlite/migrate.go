package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"github.com/continuo-dev/continuo/internal/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations returns the embedded migrations in order.
func Migrations() ([]store.Migration, error) { return store.LoadMigrations(migrations, "migrations") }

// migrate applies the migrations the mode allows, each in its own
// transaction. BEGIN IMMEDIATE takes the write lock before the version is
// read, so two processes migrating one file at once apply each step once.
func migrate(ctx context.Context, conn *sql.Conn, mode store.MigrateMode) error {
	ms, err := Migrations()
	if err != nil {
		return err
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
