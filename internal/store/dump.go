package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
)

// The export format is JSON Lines, the same for every driver, so that a
// database can move between SQLite and PostgreSQL:
//
//	{"format":"continuo-export","version":1,"schema_version":N}
//	{"table":"groups","row":{"id":"grp_…","name":"admin",…}}
//	…
//	{"end":true,"rows":R}
//
// Values are JSON strings, integers or null. The last line lets an import
// tell a complete file from a truncated one.
const exportFormat = "continuo-export"

type header struct {
	Format        string `json:"format"`
	Version       int    `json:"version"`
	SchemaVersion int    `json:"schema_version"`
}

type line struct {
	Table string         `json:"table,omitempty"`
	Row   map[string]any `json:"row,omitempty"`
	End   bool           `json:"end,omitempty"`
	Rows  int            `json:"rows,omitempty"`
}

// Export writes every row of every table, read from one snapshot, to w.
// It returns the number of rows written.
func Export(ctx context.Context, s Store, schemaVersion int, w io.Writer) (int, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(header{Format: exportFormat, Version: 1, SchemaVersion: schemaVersion}); err != nil {
		return 0, err
	}
	n := 0
	err := s.Read(ctx, func(tx Tx) error {
		for _, table := range Tables {
			err := tx.TableRows(ctx, table, func(row map[string]any) error {
				n++
				return enc.Encode(line{Table: table, Row: row})
			})
			if err != nil {
				return fmt.Errorf("export %s: %w", table, err)
			}
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	if err := enc.Encode(line{End: true, Rows: n}); err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// ErrNotEmpty is returned by Import for a database that already holds data.
var ErrNotEmpty = errors.New("store: import needs an empty database")

// Import reads an export into an empty store, in one transaction: either
// every row is imported or none is. The export's schema version must be
// the store's.
func Import(ctx context.Context, s Store, schemaVersion int, r io.Reader) (int, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	dec.UseNumber()
	var h header
	if err := dec.Decode(&h); err != nil || h.Format != exportFormat || h.Version != 1 {
		return 0, errors.New("import: not a continuo export (version 1)")
	}
	if h.SchemaVersion != schemaVersion {
		return 0, fmt.Errorf("import: the export has schema version %d, this database %d", h.SchemaVersion, schemaVersion)
	}
	n := 0
	err := s.Write(ctx, func(tx Tx) error {
		empty := true
		for _, table := range []string{"meta", "groups"} {
			err := tx.TableRows(ctx, table, func(map[string]any) error { empty = false; return nil })
			if err != nil {
				return err
			}
		}
		if !empty {
			return ErrNotEmpty
		}
		seen := 0 // index in Tables: rows must come in table order
		for {
			var l line
			if err := dec.Decode(&l); err != nil {
				return fmt.Errorf("import: line %d: %w", n+2, err)
			}
			if l.End {
				if l.Rows != n {
					return fmt.Errorf("import: the export says %d rows, it has %d", l.Rows, n)
				}
				return nil
			}
			i := slices.Index(Tables, l.Table)
			if i < 0 {
				return fmt.Errorf("import: line %d: unknown table %q", n+2, l.Table)
			}
			if i < seen {
				return fmt.Errorf("import: line %d: table %q out of order", n+2, l.Table)
			}
			seen = i
			row, err := values(l.Row)
			if err != nil {
				return fmt.Errorf("import: line %d: %w", n+2, err)
			}
			if err := tx.TableInsert(ctx, l.Table, row); err != nil {
				return fmt.Errorf("import: line %d (%s): %w", n+2, l.Table, err)
			}
			n++
		}
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// values turns decoded JSON into column values: integers, strings, nulls.
func values(in map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(in))
	for k, v := range in {
		switch x := v.(type) {
		case json.Number:
			i, err := x.Int64()
			if err != nil {
				return nil, fmt.Errorf("column %s: %s is not an integer", k, x)
			}
			out[k] = i
		case string, nil:
			out[k] = x
		default:
			return nil, fmt.Errorf("column %s: unsupported value %T", k, v)
		}
	}
	return out, nil
}

// TableDigest is one table's row count and the SHA-256 of its export lines,
// in order: two databases with equal digests hold the same rows.
type TableDigest struct {
	Table  string `json:"table"`
	Rows   int    `json:"rows"`
	SHA256 string `json:"sha256"`
}

// digester hashes export lines per table.
type digester struct {
	out []TableDigest
	cur hash.Hash
}

func (d *digester) line(table string, b []byte) {
	if len(d.out) == 0 || d.out[len(d.out)-1].Table != table {
		d.finish()
		d.out = append(d.out, TableDigest{Table: table})
		d.cur = sha256.New()
	}
	d.out[len(d.out)-1].Rows++
	d.cur.Write(b)
}

func (d *digester) finish() {
	if len(d.out) > 0 && d.cur != nil {
		d.out[len(d.out)-1].SHA256 = hex.EncodeToString(d.cur.Sum(nil))
	}
}

// all returns a digest for every table of Tables, empty ones included.
func (d *digester) all() []TableDigest {
	d.finish()
	empty := hex.EncodeToString(sha256.New().Sum(nil))
	out := make([]TableDigest, len(Tables))
	for i, t := range Tables {
		out[i] = TableDigest{Table: t, SHA256: empty}
		for _, x := range d.out {
			if x.Table == t {
				out[i] = x
			}
		}
	}
	return out
}

// Digest returns the digests of a live store, read from one snapshot: the
// digests its export would have.
func Digest(ctx context.Context, s Store) ([]TableDigest, error) {
	var d digester
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	err := s.Read(ctx, func(tx Tx) error {
		for _, table := range Tables {
			err := tx.TableRows(ctx, table, func(row map[string]any) error {
				buf.Reset()
				if err := enc.Encode(line{Table: table, Row: row}); err != nil {
					return err
				}
				d.line(table, buf.Bytes())
				return nil
			})
			if err != nil {
				return fmt.Errorf("digest %s: %w", table, err)
			}
		}
		return nil
	})
	return d.all(), err
}

// DigestFile returns the schema version and digests of an export file,
// checking its header and trailer as Import does.
func DigestFile(r io.Reader) (int, []TableDigest, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var d digester
	var h header
	n, version := 0, 0
	for i := 0; ; i++ {
		b, err := br.ReadBytes('\n')
		if err == io.EOF && len(b) == 0 {
			return 0, nil, errors.New("verify: the export ends without its trailer (truncated?)")
		} else if err != nil && err != io.EOF {
			return 0, nil, err
		}
		if i == 0 {
			if json.Unmarshal(b, &h) != nil || h.Format != exportFormat || h.Version != 1 {
				return 0, nil, errors.New("verify: not a continuo export (version 1)")
			}
			version = h.SchemaVersion
			continue
		}
		var l line
		if err := json.Unmarshal(b, &l); err != nil {
			return 0, nil, fmt.Errorf("verify: line %d: %w", i+1, err)
		}
		if l.End {
			if l.Rows != n {
				return 0, nil, fmt.Errorf("verify: the export says %d rows, it has %d", l.Rows, n)
			}
			return version, d.all(), nil
		}
		if !slices.Contains(Tables, l.Table) {
			return 0, nil, fmt.Errorf("verify: line %d: unknown table %q", i+1, l.Table)
		}
		d.line(l.Table, b)
		n++
	}
}
