package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/continuo-dev/continuo/internal/store"
)

// runExport writes every row of the database to FILE ("-" for stdout),
// from one consistent snapshot; the server may keep running meanwhile.
// With --verify it writes nothing and compares FILE with the live database
// instead: row counts and a hash per table.
func runExport(e *env, args []string) error {
	fs := e.flags("export", "export FILE | export --verify FILE   (FILE - is stdout, or stdin with --verify)")
	verify := fs.Bool("verify", false, "compare FILE with the live database (row counts and SHA-256 per table) instead of writing it")
	pos, err := e.parse(fs, args, 1)
	if err != nil {
		return err
	}
	if *verify {
		return verifyExport(e, pos[0])
	}
	if pos[0] == "-" && e.json {
		return fmt.Errorf("%w: export to stdout cannot also print --json", errUsage)
	}
	v := store.SchemaVersion
	s, err := e.open(openOptions{})
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

// errMismatch is a verification that found differences (exit status 1).
var errMismatch error = reported("the export and the database differ")

func verifyExport(e *env, file string) error {
	var r io.Reader = e.stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	version, want, err := store.DigestFile(r)
	if err != nil {
		return err
	}
	s, err := e.open(openOptions{})
	if err != nil {
		return err
	}
	defer s.Close()
	got, err := store.Digest(e.ctx, s)
	if err != nil {
		return err
	}
	type diff struct {
		Table     string `json:"table"`
		FileRows  int    `json:"file_rows"`
		LiveRows  int    `json:"database_rows"`
		SameRows  bool   `json:"same_rows"`
		SameBytes bool   `json:"same_content"`
	}
	var diffs []diff
	var b strings.Builder
	same := version == store.SchemaVersion
	if !same {
		fmt.Fprintf(&b, "schema version: export %d, database %d\n", version, store.SchemaVersion)
	}
	for i := range want {
		d := diff{Table: want[i].Table, FileRows: want[i].Rows, LiveRows: got[i].Rows,
			SameRows: want[i].Rows == got[i].Rows, SameBytes: want[i].SHA256 == got[i].SHA256}
		diffs = append(diffs, d)
		mark := "same"
		if !d.SameBytes {
			same, mark = false, "DIFFERENT"
		}
		fmt.Fprintf(&b, "%-22s export %7d rows, database %7d rows  %s\n", d.Table, d.FileRows, d.LiveRows, mark)
	}
	e.out(map[string]any{"file": file, "same": same, "schema_version": version, "tables": diffs}, strings.TrimSuffix(b.String(), "\n"))
	if !same {
		return errMismatch
	}
	return nil
}

// runImport loads an export into an empty database, all or nothing.
func runImport(e *env, args []string) error {
	fs := e.flags("import", "import FILE   (into an empty data directory; FILE - reads stdin)")
	pos, err := e.parse(fs, args, 1)
	if err != nil {
		return err
	}
	v := store.SchemaVersion
	var r io.Reader = e.stdin
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	// Import is how a lost database is restored, so it may create one,
	// also where the data directory says a database existed.
	s, err := e.open(openOptions{create: true, reinit: true})
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
