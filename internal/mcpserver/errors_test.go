package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/continuo-dev/continuo"

	"github.com/continuo-dev/continuo/internal/store"
)

// TestAmbiguousCommit: a write whose commit outcome is unknown (the
// database connection broke under COMMIT) is never reported as a plain
// failure to retry: the client is told to reconcile, and that a keyed
// mutation may be retried with its key. The cause stays in the log.
func TestAmbiguousCommit(t *testing.T) {
	var log strings.Builder
	s := &server{core: &core{opts: Options{Logger: slog.New(slog.NewTextHandler(&log, nil))}}}
	cause := errors.Join(store.ErrAmbiguous, errors.New("commit: read tcp 10.0.0.1:5432: connection reset"))
	res := s.errorResult(t.Context(), "post_session_message", fmt.Errorf("post to session ~s1: %w", cause))
	var body struct {
		Error ErrorBody `json:"error"`
	}
	if err := json.Unmarshal(res.StructuredContent.(json.RawMessage), &body); err != nil {
		t.Fatal(err)
	}
	if !res.IsError || body.Error.Code != "internal" || body.Error.Retry != "reconcile" {
		t.Errorf("ambiguous commit: %+v, want internal with retry reconcile", body.Error)
	}
	if strings.Contains(body.Error.Message, "10.0.0.1") || !strings.Contains(body.Error.Message, "idempotency key") {
		t.Errorf("message %q: want a plain sentence naming the key, never the cause", body.Error.Message)
	}
	if !strings.Contains(log.String(), "connection reset") {
		t.Errorf("the cause was not logged: %s", log.String())
	}
}

// TestRedactedTagsAndDetails: tags and every value of an error's details
// are redacted like text: an argument name or a tag that carries a
// credential is never echoed.
func TestRedactedTagsAndDetails(t *testing.T) {
	secret := "glpat-" + strings.Repeat("x1Y2", 5)
	s := &server{core: &core{opts: Options{Logger: slog.New(slog.DiscardHandler)}}}
	_, err := decode[ListProjectsArgs]([]byte(`{"` + secret + `": 1}`))
	if err == nil {
		t.Fatal("an unknown argument was accepted")
	}
	res := s.errorResult(t.Context(), "list_projects", err)
	b, _ := json.Marshal(res)
	if strings.Contains(string(b), secret) {
		t.Errorf("the error result echoes the credential: %s", b)
	}
	m := message(&continuo.Message{ID: "msg_x", Tags: []string{"release", secret}})
	if strings.Contains(strings.Join(m.Tags, ","), secret) || !m.Redacted || m.Tags[0] != "release" {
		t.Errorf("tags %q redacted=%v: want the credential redacted and the plain tag kept", m.Tags, m.Redacted)
	}
}
