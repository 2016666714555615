package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/continuo-dev/continuo/internal/store"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations returns the embedded migrations in order.
func Migrations() ([]store.Migration, error) { return store.LoadMigrations(migrations, "migrations") }

// migrateLock is the advisory lock key under which migrations run, so that
// replicas starting at once never apply a step twice.
const migrateLock = 0x636f6e74696e756f // "continuo"

// migrate applies the migrations the mode allows, each in its own
// transaction, holding a session advisory lock for the whole run. With
// existing, a database without the schema (in the search path's first
// schema) is store.ErrNoDatabase and is not touched.
func migrate(ctx context.Context, pool *pgxpool.Pool, mode store.MigrateMode, existing bool) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrateLock)); err != nil {
		return fmt.Errorf("postgres: take the migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrateLock)) //nolint:errcheck // released with the session anyway
	if existing {
		var version int
		var present bool
		err := conn.QueryRow(ctx, "SELECT to_regclass('schema_migrations') IS NOT NULL").Scan(&present)
		if err == nil && present {
			err = conn.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&version)
		}
		if err != nil {
			return fmt.Errorf("postgres: read schema version: %w", err)
		}
		if version == 0 {
			return fmt.Errorf("%w: the PostgreSQL database has no Continuo schema", store.ErrNoDatabase)
		}
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version bigint PRIMARY KEY, name text NOT NULL)`); err != nil {
		return fmt.Errorf("postgres: create schema_migrations: %w", err)
	}
	var current int
	if err := conn.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&current); err != nil {
		return fmt.Errorf("postgres: read schema version: %w", err)
	}
	todo, err := store.PlanMigration(ms, current, mode)
	if err != nil {
		return err
	}
	for _, m := range todo {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			_ = tx.Rollback(ctx)
			return fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
			_ = tx.Rollback(ctx)
			return fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
		}
	}
	return nil
}
