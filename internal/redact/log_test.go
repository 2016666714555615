package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewTextHandler(&buf, nil)))
	pat := "cto_pat_" + strings.Repeat("abcdefgh", 4)
	log.With("api_key", "plain-value").Info("dial with "+pat, "err", errors.New("401: Bearer "+pat),
		"count", 3, slog.Group("g", "password", "x", "note", "fine"))
	out := buf.String()
	for _, leak := range []string{pat, "plain-value", "password=x"} {
		if strings.Contains(out, leak) {
			t.Errorf("the log holds %q:\n%s", leak, out)
		}
	}
	for _, keep := range []string{"count=3", "g.note=fine", `msg="dial with [redacted]"`, "api_key=[redacted]"} {
		if !strings.Contains(out, keep) {
			t.Errorf("the log lost %q:\n%s", keep, out)
		}
	}
}
