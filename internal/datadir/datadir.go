// Package datadir is a Continuo data directory on disk: where it is by
// default, the marker that says a database was created in it, and the
// locks that keep two servers, or two first starts, from stepping on each
// other.
package datadir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Default returns the default data directory: $CONTINUO_DATA_DIR, else
// $XDG_DATA_HOME/continuo (when that is an absolute path, as the XDG base
// directory specification requires), else ~/.local/share/continuo. getenv
// and home are os.Getenv and os.UserHomeDir in production.
func Default(getenv func(string) string, home func() (string, error)) (string, error) {
	if d := getenv("CONTINUO_DATA_DIR"); d != "" {
		return filepath.Abs(d)
	}
	if x := getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "continuo"), nil
	}
	h, err := home()
	if err != nil || h == "" {
		return "", errors.New("no data directory: set CONTINUO_DATA_DIR or HOME, or pass --data-dir")
	}
	return filepath.Join(h, ".local", "share", "continuo"), nil
}

// MarkerName is the file that records that a database was created for a
// data directory. It outlives the database when someone deletes
// continuo.db*, which is how a lost database is told from a new directory.
const MarkerName = "continuo.initialized"

// Marker is the content of the marker file.
type Marker struct {
	// Database identifies the database created for the directory: the
	// absolute path of a SQLite file, or a PostgreSQL URL without its user
	// information.
	Database string `json:"database"`
	// CreatedAt is when it was created (RFC 3339).
	CreatedAt string `json:"created_at"`
	Note      string `json:"note"`
}

// ReadMarker reads dir's marker; ok is false when there is none.
func ReadMarker(dir string) (m Marker, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, MarkerName))
	if errors.Is(err, fs.ErrNotExist) {
		return Marker{}, false, nil
	}
	if err != nil {
		return Marker{}, false, err
	}
	if len(b) > 64<<10 {
		return Marker{}, false, fmt.Errorf("%s: too large to be a marker", filepath.Join(dir, MarkerName))
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Marker{}, false, fmt.Errorf("%s: %w", filepath.Join(dir, MarkerName), err)
	}
	return m, true, nil
}

// WriteMarker records that database was created for dir (written to a
// temporary file and renamed, so a reader never sees half of it).
func WriteMarker(dir, database string, now time.Time) error {
	m := Marker{Database: database, CreatedAt: now.UTC().Format(time.RFC3339),
		Note: "Continuo created a database for this directory. If the database disappears, continuo refuses to start over with an empty one unless run with --init."}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".marker-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, MarkerName))
}
