package store

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// SchemaVersion is the schema this binary reads and writes. Every driver
// embeds exactly this many migrations, numbered 1..SchemaVersion, and the
// same version means the same logical schema in every driver (a test
// compares them).
const SchemaVersion = 18

// Migration is one numbered schema step.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// LoadMigrations reads the NNNN_name.sql files of dir in fsys, in order, and
// checks that they are numbered 1..SchemaVersion without gaps.
func LoadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration %s: want NNNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %04d_%s: want version %d", m.Version, m.Name, i+1)
		}
	}
	if len(out) != SchemaVersion {
		return nil, fmt.Errorf("%d migrations embedded, this binary's schema version is %d", len(out), SchemaVersion)
	}
	return out, nil
}

// MigrateMode says what Open may do to a database's schema.
type MigrateMode int

const (
	// MigrateEmpty migrates an empty database (a first start) and refuses
	// an older one: replicas upgrade only when the operator says so.
	MigrateEmpty MigrateMode = iota
	// MigrateUp applies every pending migration (`continuo migrate up`).
	MigrateUp
)

// PlanMigration decides what Open does with a database at version current:
// it returns the migrations to apply, or ErrSchema saying what to do.
func PlanMigration(ms []Migration, current int, mode MigrateMode) ([]Migration, error) {
	switch {
	case current > len(ms):
		return nil, fmt.Errorf("%w: the database schema is at version %d, newer than this binary's %d: upgrade continuo", ErrSchema, current, len(ms))
	case current == len(ms):
		return nil, nil
	case current > 0 && mode != MigrateUp:
		return nil, fmt.Errorf("%w: the database schema is at version %d, this binary needs %d: run `continuo migrate up` (with the same --data-dir or --database-url)", ErrSchema, current, len(ms))
	}
	return ms[current:], nil
}
