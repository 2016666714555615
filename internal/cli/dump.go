package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/continuo-dev/continuo/internal/store"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
)

// schemaVersion is the schema this binary writes and reads.
func schemaVersion() (int, error) {
	ms, err := sqlite.Migrations()
	return len(ms), err
}

// runExport writes every row of the database to FILE ("-" for stdout),
// from one consistent snapshot; the server may keep running meanwhile.
func runExport(e *env, args []string) error {
	fs := e.flags("export", "export FILE   (FILE - writes to stdout)")
	pos, err := e.parse(fs, args, 1)
	if err != nil {
		return err
	}
	if pos[0] == "-" && e.json {
		return fmt.Errorf("%w: export to stdout cannot also print --json", errUsage)
	}
	v, err := schemaVersion()
	if err != nil {
		return err
	}
	s, err := e.open(nil)
	if err != nil {
		return err
	}
	defer s.Close()
	if pos[0] == "-" {
		_, err := store.Export(e.ctx, s, v, e.stdout)
		return err
	}
	// Write to a temporary file and rename it, so that FILE is never a
	// half-written export.
	tmp, err := os.CreateTemp(filepath.Dir(pos[0]), ".continuo-export-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	n, err := store.Export(e.ctx, s, v, tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), pos[0])
	}
	if err != nil {
		return fmt.Errorf("export to %s: %w", pos[0], err)
	}
	e.out(map[string]any{"file": pos[0], "rows": n, "schema_version": v}, fmt.Sprintf("exported %d rows to %s", n, pos[0]))
	return nil
}

// runImport loads an export into an empty database, all or nothing.
func runImport(e *env, args []string) error {
	fs := e.flags("import", "import FILE   (into an empty data directory; FILE - reads stdin)")
	pos, err := e.parse(fs, args, 1)
	if err != nil {
		return err
	}
	v, err := schemaVersion()
	if err != nil {
		return err
	}
	var r io.Reader = e.stdin
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	s, err := e.open(nil)
	if err != nil {
		return err
	}
	defer s.Close()
	n, err := store.Import(e.ctx, s, v, r)
	if err != nil {
		return err
	}
	e.out(map[string]any{"file": pos[0], "rows": n, "schema_version": v}, fmt.Sprintf("imported %d rows from %s", n, pos[0]))
	return nil
}
