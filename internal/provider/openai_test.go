package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/provider"
	"github.com/continuo-dev/continuo/internal/provider/providertest"
)

// testKey is the credential every test configures; the fake server echoes
// it in every failure it produces.
const testKey = "sk-providertest-5e1f0c9a7b3d4e2f"

// wait bounds every wait on a signal: a test that waits this long has
// failed.
const wait = 10 * time.Second

// recorder is a Sink that keeps what it is given.
type recorder struct {
	mu     sync.Mutex
	texts  []string
	events [][2]string
	first  chan struct{} // closed at the first Text
	once   sync.Once
	onText func(string) // called after each Text, in the provider's goroutine
}

func newRecorder() *recorder { return &recorder{first: make(chan struct{})} }

func (r *recorder) Text(s string) {
	r.mu.Lock()
	r.texts = append(r.texts, s)
	r.mu.Unlock()
	r.once.Do(func() { close(r.first) })
	if r.onText != nil {
		r.onText(s)
	}
}

func (r *recorder) Event(kind, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, [2]string{kind, text})
}

func (r *recorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.texts, "")
}

func (r *recorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.texts, r.events)
}

// kinds are the two OpenAI kinds and the path each posts to.
var kinds = []struct{ kind, path string }{
	{provider.KindResponses, "/v1/responses"},
	{provider.KindChat, "/v1/chat/completions"},
}

// newProvider configures kind against srv with testKey.
func newProvider(t *testing.T, kind, baseURL string, mod ...func(*provider.Config)) provider.Provider {
	t.Helper()
	cfg := provider.Config{ID: "test", Kind: kind, BaseURL: baseURL, Model: "test-model", APIKey: testKey}
	for _, m := range mod {
		m(&cfg)
	}
	p, err := provider.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// run runs one turn, failing the test if it does not return within wait.
func run(t *testing.T, ctx context.Context, p provider.Provider, rec *recorder) provider.Result {
	t.Helper()
	done := make(chan provider.Result, 1)
	go func() { done <- p.Run(ctx, provider.Request{Prompt: "Say hello."}, rec) }()
	select {
	case res := <-done:
		return res
	case <-time.After(wait):
		t.Fatalf("Run did not return within %v", wait)
		return provider.Result{}
	}
}

// noLeak fails if the key is in the result, the sink or an error.
func noLeak(t *testing.T, res provider.Result, rec *recorder, errs ...error) {
	t.Helper()
	if s := fmt.Sprintf("%+v %+v", res, res.Usage); strings.Contains(s, testKey) {
		t.Errorf("the key is in the result: %s", s)
	}
	if rec != nil && strings.Contains(rec.all(), testKey) {
		t.Errorf("the key reached the sink: %s", rec.all())
	}
	for _, err := range errs {
		if err != nil && strings.Contains(err.Error(), testKey) {
			t.Errorf("the key is in an error: %v", err)
		}
	}
}

// oneRequest checks that exactly one request reached srv, at path, with
// the key.
func oneRequest(t *testing.T, srv *providertest.Server, method, path string) providertest.Request {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests reached the server, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != method || r.Path != path || r.Authorization != "Bearer "+testKey {
		t.Fatalf("request %s %s with Authorization %q; want %s %s with the key", r.Method, r.Path, r.Authorization, method, path)
	}
	return r
}

// wantRequest runs a turn on a provider of kind whose output limit is max
// and checks its one request: to path, with body want, JSON that asks
// for an event stream.
func wantRequest(t *testing.T, kind, path string, max int, want map[string]any) {
	t.Helper()
	srv := providertest.NewServer(t, providertest.Script{Deltas: []string{"hi"}})
	p := newProvider(t, kind, srv.BaseURL(), func(cfg *provider.Config) { cfg.MaxOutputTokens = max })
	if res := run(t, t.Context(), p, newRecorder()); res.ErrorKind != "" {
		t.Fatalf("result %+v", res)
	}
	r := oneRequest(t, srv, http.MethodPost, path)
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil || !reflect.DeepEqual(body, want) {
		t.Fatalf("body %s (%v), want %v", r.Body, err, want)
	}
	if ct, acc := r.Header.Get("Content-Type"), r.Header.Get("Accept"); ct != "application/json" || acc != "text/event-stream" {
		t.Fatalf("Content-Type %q, Accept %q", ct, acc)
	}
}

// dialect is a stream as a server sends it (raw, then how it ends) and
// what reading it must give: the result, the text and the events.
type dialect struct {
	name   string
	raw    string
	end    providertest.End
	want   provider.Result
	text   string
	events [][2]string
}

// runDialects runs each case on a provider of kind, which must make
// exactly one request, to path.
func runDialects(t *testing.T, kind, path string, cases []dialect) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := providertest.NewServer(t, providertest.Script{Raw: c.raw, End: c.end})
			rec := newRecorder()
			res := run(t, t.Context(), newProvider(t, kind, srv.BaseURL()), rec)
			if !reflect.DeepEqual(res, c.want) {
				t.Errorf("result %+v (usage %+v), want %+v (usage %+v)", res, res.Usage, c.want, c.want.Usage)
			}
			if got := rec.text(); got != c.text {
				t.Errorf("text %q, want %q", got, c.text)
			}
			if !reflect.DeepEqual(rec.events, c.events) {
				t.Errorf("events %q, want %q", rec.events, c.events)
			}
			oneRequest(t, srv, http.MethodPost, path)
		})
	}
}

// TestEnds runs every scripted end on both kinds: how the turn ended, its
// usage, the text streamed, exactly one request (no retries), and the key
// (which every scripted failure echoes) in no result and no sink text.
func TestEnds(t *testing.T) {
	deltas := []string{"Hel", "lo", " world"}
	usage := &provider.Usage{InputTokens: 7, OutputTokens: 3, TotalTokens: 10}
	for _, c := range []struct {
		name   string
		script providertest.Script
		want   provider.Result
		text   string
	}{
		{"completed", providertest.Script{}, provider.Result{Usage: usage}, "Hello world"},
		{"completed with CRLF and comments", providertest.Script{CRLF: true, Comments: true}, provider.Result{Usage: usage}, "Hello world"},
		{"own usage", providertest.Script{Usage: &providertest.Usage{InputTokens: 1200, OutputTokens: 34, TotalTokens: 1234}},
			provider.Result{Usage: &provider.Usage{InputTokens: 1200, OutputTokens: 34, TotalTokens: 1234}}, "Hello world"},
		{"max tokens", providertest.Script{End: providertest.EndIncomplete}, provider.Result{ErrorKind: "incomplete", Usage: usage}, "Hello world"},
		{"content filter", providertest.Script{End: providertest.EndContentFilter}, provider.Result{ErrorKind: "incomplete", Usage: usage}, "Hello world"},
		{"refusal", providertest.Script{End: providertest.EndRefusal}, provider.Result{ErrorKind: "refusal", Usage: usage}, "Hello world"},
		{"failed", providertest.Script{End: providertest.EndFailed}, provider.Result{ErrorKind: "stream_error"}, "Hello world"},
		{"error event", providertest.Script{End: providertest.EndError}, provider.Result{ErrorKind: "stream_error"}, "Hello world"},
		{"401", providertest.Script{End: providertest.EndStatus, Status: 401}, provider.Result{ErrorKind: "http_status", Status: 401}, ""},
		{"429", providertest.Script{End: providertest.EndStatus, Status: 429}, provider.Result{ErrorKind: "http_status", Status: 429}, ""},
		{"500", providertest.Script{End: providertest.EndStatus}, provider.Result{ErrorKind: "http_status", Status: 500}, ""},
		{"wrong key", providertest.Script{APIKey: "sk-another"}, provider.Result{ErrorKind: "http_status", Status: 401}, ""},
		{"dropped", providertest.Script{End: providertest.EndDrop}, provider.Result{ErrorKind: "no_completion"}, "Hello world"},
		{"malformed", providertest.Script{End: providertest.EndMalformed}, provider.Result{ErrorKind: "malformed_stream"}, "Hello world"},
		{"no terminal event", providertest.Script{End: providertest.EndNone}, provider.Result{ErrorKind: "no_completion"}, "Hello world"},
		{"not a stream", providertest.Script{ContentType: "application/json"}, provider.Result{ErrorKind: "malformed_stream"}, ""},
	} {
		for _, k := range kinds {
			t.Run(k.kind+"/"+c.name, func(t *testing.T) {
				c.script.Deltas = deltas
				srv := providertest.NewServer(t, c.script)
				rec := newRecorder()
				res := run(t, t.Context(), newProvider(t, k.kind, srv.BaseURL()), rec)
				if !reflect.DeepEqual(res, c.want) {
					t.Errorf("result %+v (usage %+v), want %+v (usage %+v)", res, res.Usage, c.want, c.want.Usage)
				}
				if got := rec.text(); got != c.text {
					t.Errorf("text %q, want %q", got, c.text)
				}
				oneRequest(t, srv, http.MethodPost, k.path)
				noLeak(t, res, rec)
			})
		}
	}
}

// TestStreamsIncrementally: the sink has the first delta before the server
// sends the last one (the server waits for it, with a deadline).
func TestStreamsIncrementally(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			rec := newRecorder()
			var sawFirst atomic.Bool
			srv := providertest.NewServer(t, providertest.Script{
				Deltas: []string{"one", " two", " three"},
				Before: func(ctx context.Context, i int) {
					if i != 2 {
						return
					}
					select {
					case <-rec.first:
						sawFirst.Store(true)
					case <-ctx.Done():
					case <-time.After(wait):
					}
				},
			})
			res := run(t, t.Context(), newProvider(t, k.kind, srv.BaseURL()), rec)
			if res.ErrorKind != "" || !sawFirst.Load() {
				t.Fatalf("result %+v; the sink had the first delta before the last was sent: %v", res, sawFirst.Load())
			}
			if got := rec.text(); got != "one two three" {
				t.Fatalf("text %q", got)
			}
		})
	}
}

// TestCancel: a turn cancelled mid-stream returns promptly with Stopped,
// and the server sees its connection go.
func TestCancel(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			srv := providertest.NewServer(t, providertest.Script{Deltas: []string{"partial"}, End: providertest.EndHang})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			rec := newRecorder()
			rec.onText = func(string) { cancel() }
			start := time.Now()
			res := run(t, ctx, newProvider(t, k.kind, srv.BaseURL()), rec)
			if !reflect.DeepEqual(res, provider.Result{Stopped: true}) {
				t.Fatalf("result %+v, want Stopped", res)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Run returned %v after the cancel", d)
			}
			wctx, wcancel := context.WithTimeout(t.Context(), wait)
			defer wcancel()
			if err := srv.WaitGone(wctx); err != nil {
				t.Fatalf("the server did not see the connection close: %v", err)
			}
			if rec.text() != "partial" {
				t.Errorf("text %q", rec.text())
			}
		})
	}
}

// TestCancelledBefore: a turn whose context has ended sends nothing.
func TestCancelledBefore(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			srv := providertest.NewServer(t, providertest.Script{Deltas: []string{"x"}})
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			res := run(t, ctx, newProvider(t, k.kind, srv.BaseURL()), newRecorder())
			if !res.Stopped || res.ErrorKind != "" {
				t.Fatalf("result %+v, want Stopped", res)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Fatalf("%d requests", n)
			}
		})
	}
}

// TestHeaderTimeout: a server that sends no headers within HTTPTimeout is
// a connect failure, and the connection is closed.
func TestHeaderTimeout(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			srv := providertest.NewServer(t, providertest.Script{HoldHeaders: true})
			p := newProvider(t, k.kind, srv.BaseURL(), func(c *provider.Config) { c.HTTPTimeout = 100 * time.Millisecond })
			res := run(t, t.Context(), p, newRecorder())
			if !reflect.DeepEqual(res, provider.Result{ErrorKind: "connect"}) {
				t.Fatalf("result %+v, want connect", res)
			}
			oneRequest(t, srv, http.MethodPost, k.path)
			wctx, cancel := context.WithTimeout(t.Context(), wait)
			defer cancel()
			if err := srv.WaitGone(wctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// freeAddr is a 127.0.0.1 address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestUnreachable: nothing listening is a connect failure for Run, and an
// error from Check naming neither key nor path.
func TestUnreachable(t *testing.T) {
	addr := freeAddr(t)
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			p := newProvider(t, k.kind, "http://"+addr+"/v1")
			res := run(t, t.Context(), p, newRecorder())
			if !reflect.DeepEqual(res, provider.Result{ErrorKind: "connect"}) {
				t.Fatalf("result %+v, want connect", res)
			}
			err := p.Check(t.Context())
			if err == nil || strings.Contains(err.Error(), "/v1") {
				t.Fatalf("Check: %v", err)
			}
			noLeak(t, res, nil, err)
		})
	}
}

// TestRedirect: a redirect is not followed; the key goes to the configured
// server only.
func TestRedirect(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			other := providertest.NewServer(t, providertest.Script{Deltas: []string{"x"}})
			srv := providertest.NewServer(t, providertest.Script{End: providertest.EndStatus, Status: 307, Location: other.URL + k.path})
			rec := newRecorder()
			res := run(t, t.Context(), newProvider(t, k.kind, srv.BaseURL()), rec)
			if !reflect.DeepEqual(res, provider.Result{ErrorKind: "http_status", Status: 307}) {
				t.Fatalf("result %+v", res)
			}
			oneRequest(t, srv, http.MethodPost, k.path)
			if n := len(other.Requests()); n != 0 {
				t.Fatalf("the redirect was followed: %d requests", n)
			}
			noLeak(t, res, rec)
		})
	}
}

// TestNoKey: without a key no Authorization header is sent.
func TestNoKey(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			srv := providertest.NewServer(t, providertest.Script{Deltas: []string{"x"}})
			p := newProvider(t, k.kind, srv.BaseURL(), func(c *provider.Config) { c.APIKey = "" })
			if res := run(t, t.Context(), p, newRecorder()); res.ErrorKind != "" {
				t.Fatalf("result %+v", res)
			}
			if err := p.Check(t.Context()); err != nil {
				t.Fatal(err)
			}
			for _, r := range srv.Requests() {
				if _, ok := r.Header["Authorization"]; ok {
					t.Fatalf("%s %s sent Authorization %q", r.Method, r.Path, r.Authorization)
				}
			}
		})
	}
}

// TestCheck: GET /models with the key; 2xx is nil, anything else an error
// naming the status and not what the server answered.
func TestCheck(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			srv := providertest.NewServer(t, providertest.Script{})
			if err := newProvider(t, k.kind, srv.BaseURL()+"/").Check(t.Context()); err != nil {
				t.Fatalf("Check: %v", err)
			}
			oneRequest(t, srv, http.MethodGet, "/v1/models")

			for _, status := range []int{401, 500} {
				srv := providertest.NewServer(t, providertest.Script{End: providertest.EndStatus, Status: status})
				err := newProvider(t, k.kind, srv.BaseURL()).Check(t.Context())
				if want := fmt.Sprintf(`provider "test": list models: HTTP %d`, status); err == nil || err.Error() != want {
					t.Fatalf("Check: %v, want %s", err, want)
				}
				oneRequest(t, srv, http.MethodGet, "/v1/models")
				noLeak(t, provider.Result{}, nil, err)
			}

			srv = providertest.NewServer(t, providertest.Script{APIKey: "sk-another"})
			err := newProvider(t, k.kind, srv.BaseURL()).Check(t.Context())
			if err == nil || !strings.Contains(err.Error(), "HTTP 401") {
				t.Fatalf("Check with a wrong key: %v", err)
			}
			noLeak(t, provider.Result{}, nil, err)

			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if err := newProvider(t, k.kind, srv.BaseURL()).Check(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("Check with an ended context: %v", err)
			}
		})
	}
}

// TestNew: what New accepts and the errors it gives, which never quote a
// URL (it may carry a password) or the key.
func TestNew(t *testing.T) {
	ok := provider.Config{ID: "p", Kind: provider.KindResponses, BaseURL: "https://api.example.com/v1", Model: "m", APIKey: testKey}
	for _, kind := range []string{provider.KindResponses, provider.KindChat} {
		cfg := ok
		cfg.Kind = kind
		p, err := provider.New(cfg)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if !reflect.DeepEqual(p.Config(), cfg) {
			t.Fatalf("Config() = %+v", p.Config())
		}
	}
	for _, c := range []struct {
		name string
		mod  func(*provider.Config)
		want string
	}{
		{"acp", func(c *provider.Config) { c.Kind = provider.KindACP }, `provider "p": acp: command is empty`},
		{"unknown kind", func(c *provider.Config) { c.Kind = "anthropic" }, `provider "p": unknown kind "anthropic" (one of openai-responses, openai-chat, acp)`},
		{"no base url", func(c *provider.Config) { c.BaseURL = "" }, `provider "p": base_url must be an absolute http or https URL`},
		{"relative", func(c *provider.Config) { c.BaseURL = "api.example.com/v1" }, `provider "p": base_url must be an absolute http or https URL`},
		{"ftp", func(c *provider.Config) { c.BaseURL = "ftp://api.example.com/v1" }, `provider "p": base_url must be an absolute http or https URL`},
		{"unparsable", func(c *provider.Config) { c.BaseURL = "https://u:" + testKey + "@[::1/v1" }, `provider "p": base_url must be an absolute http or https URL`},
		{"password", func(c *provider.Config) { c.BaseURL = "https://u:" + testKey + "@api.example.com/v1" }, `provider "p": base_url must carry no user or password (the key comes from api_key_env)`},
		{"query", func(c *provider.Config) { c.BaseURL = "https://api.example.com/v1?key=" + testKey }, `provider "p": base_url must have no query or fragment (the endpoint paths are appended to it)`},
		{"no model", func(c *provider.Config) { c.Model = " " }, `provider "p": model is required for kind openai-responses`},
		{"negative tokens", func(c *provider.Config) { c.MaxOutputTokens = -1 }, `provider "p": max output tokens must not be negative`},
		{"negative timeout", func(c *provider.Config) { c.HTTPTimeout = -time.Second }, `provider "p": http timeout must not be negative`},
		{"control in key", func(c *provider.Config) { c.APIKey = testKey + "\n" }, `provider "p": the API key contains a control character`},
		{"no id", func(c *provider.Config) { c.ID, c.Model = "", "" }, `provider: model is required for kind openai-responses`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.mod(&cfg)
			p, err := provider.New(cfg)
			if err == nil || err.Error() != c.want || p != nil {
				t.Fatalf("New: %v, %v; want %s", p, err, c.want)
			}
			noLeak(t, provider.Result{}, nil, err)
		})
	}
}
