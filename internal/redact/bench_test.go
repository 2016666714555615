package redact

import (
	"strings"
	"testing"
)

// benchProse is what String sees on almost every call: a handoff brief's
// notes, with identifiers, paths, hashes, IDs and a little configuration,
// and no credential.
const benchProse = `## Decisions
- Use SQLite in WAL mode for the single-node store; PostgreSQL behind the same Tx seam
  (ses_01JD8ZK3W4Q5R6S7T8V9WXYZAB, msg_01JD8ZM0N1P2Q3R4S5T6V7W8X9).
- The key decision is to keep the token bucket rate limiter per principal; password reset
  flow stays out of scope until the auth review (see docs/DECISIONS.md#auth).
- Commit 4f1c2a9d8e7b6a5f4c3d2e1f0a9b8c7d6e5f4a3b moved internal/store/sqlite/tx.go;
  run ` + "`go test ./internal/store/...`" + ` before pushing. UUID 3f2504e0-4f89-11d3-9a0c-0305e82c3301.

## Progress
1. Implemented PAT hashing (internal/auth/auth.go) and the bearer middleware; max_tokens: 4096,
   timeout_ms=2500, retries: 3. The config lives in /etc/continuo/config.toml.
2. Wrote TestReplicasRoundRobin; it alternates every request between two replicas and checks
   that both protocol families work. Author: Jane Doe. primary_key: id, sort key: created_at.
3. Open question: should list_session_messages page by seq or by created_at? We use Bearer
   token-based auth everywhere; bearer tokens expire after 24h.

## Open
- Flaky: e2e/replicas_test.go:142 times out on the 2-core runner about once in 50 runs.
- https://example.com/docs/guide?section=install#step-3 describes the install; ssh://git@github.com/org/repo.git
`

// benchCode is code-like text with assignments, most of them not secrets.
const benchCode = `func (s *Server) handle(ctx context.Context, req *Request) error {
	cfg := Config{Addr: ":8080", TokenEnv: "CONTINUO_TOKEN", MaxKeys: 3}
	key := cache.Key::new(req.ID)
	if err := s.store.Write(ctx, func(tx store.Tx) error { return tx.Put(key, req.Body) }); err != nil {
		return fmt.Errorf("write %s: %w", req.ID, err)
	}
	log.Info("stored", "id", req.ID, "size", len(req.Body), "auth_enabled", true)
	return nil
}
# config.yaml
listen: 127.0.0.1:7777
database:
  url: postgres://continuo@db:5432/continuo?sslmode=disable
  max_open_conns: 16
auth:
  token_ttl: 24h
  password_min_length: 12
`

// benchSecrets is a note that pasted credentials.
var benchSecrets = `Deploy notes: export OPENAI_API_KEY="` + openAIKey + `" and
Authorization: Bearer ` + jwt + `
postgres://admin:s3cret@db:5432/app, remote ` + githubPAT + `, aws_access_key_id AKIAIOSFODNN7EXAMPLE
password: hunter2 and the slack bot ` + slackToken + ` plus ` + continuoPAT + `
`

func BenchmarkString(b *testing.B) {
	cases := []struct{ name, text string }{
		{"prose", benchProse},
		{"code", benchCode},
		{"secrets", benchSecrets},
		{"prose64k", strings.Repeat(benchProse, 64<<10/len(benchProse)+1)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			String(c.text) // the rules and plans this text needs are compiled on first use: not timed
			b.SetBytes(int64(len(c.text)))
			b.ReportAllocs()
			for b.Loop() {
				String(c.text)
			}
		})
	}
}

// BenchmarkAdversarial is String on a rule literal repeated to 256 KiB,
// the worst case for rules tried at each anchor (TestLinearWork). Before
// the tries shared a budget, "sk-" took 2.4 s here; the implementation
// before gitleaks' rules, 30 ms.
func BenchmarkAdversarial(b *testing.B) {
	for _, lit := range []string{"sk-", "sq0atp-", "curl -u ", "eyJ"} {
		text := strings.Repeat(lit, 256<<10/len(lit))
		b.Run(strings.TrimSpace(lit), func(b *testing.B) {
			String(text)
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				String(text)
			}
		})
	}
}
