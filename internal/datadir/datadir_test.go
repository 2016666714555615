package datadir

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestDefault(t *testing.T) {
	home := func() (string, error) { return "/home/me", nil }
	noHome := func() (string, error) { return "", errors.New("no home") }
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		getenv func(string) string
		home   func() (string, error)
		want   string
	}{
		{env("CONTINUO_DATA_DIR", "/srv/continuo", "XDG_DATA_HOME", "/x"), home, "/srv/continuo"},
		{env("XDG_DATA_HOME", "/x/data"), home, "/x/data/continuo"},
		{env("XDG_DATA_HOME", "relative/data"), home, "/home/me/.local/share/continuo"}, // the spec says to ignore it
		{env(), home, "/home/me/.local/share/continuo"},
	} {
		got, err := Default(tc.getenv, tc.home)
		if err != nil || got != tc.want {
			t.Errorf("Default = %q, %v; want %q", got, err, tc.want)
		}
	}
	if got, _ := Default(env("CONTINUO_DATA_DIR", "rel"), home); !filepath.IsAbs(got) {
		t.Errorf("relative CONTINUO_DATA_DIR gave %q, want an absolute path", got)
	}
	if _, err := Default(env(), noHome); err == nil {
		t.Error("no HOME and no variable: want an error")
	}
}

func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.lock")
	l, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = TryLock(path)
	var locked *LockedError
	if !errors.As(err, &locked) || locked.PID != os.Getpid() {
		t.Fatalf("second lock: %v, want a LockedError naming pid %d", err, os.Getpid())
	}
	// WaitLock gives up when its context ends, and succeeds once released.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := WaitLock(ctx, path); !errors.As(err, &locked) {
		t.Fatalf("WaitLock while held: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := WaitLock(context.Background(), path)
		if err == nil {
			err = l2.Unlock()
		}
		got <- err
	}()
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitLock did not take the released lock")
	}
}

func TestMarker(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := ReadMarker(dir); ok || err != nil {
		t.Fatalf("empty dir: ok=%v err=%v", ok, err)
	}
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := WriteMarker(dir, "/data/continuo.db", at); err != nil {
		t.Fatal(err)
	}
	m, ok, err := ReadMarker(dir)
	if !ok || err != nil || m.Database != "/data/continuo.db" || m.CreatedAt != "2030-01-02T03:04:05Z" {
		t.Fatalf("marker %+v ok=%v err=%v", m, ok, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
}
