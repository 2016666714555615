package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The error kinds of the OpenAI kinds (Result.ErrorKind).
const (
	failHTTPStatus   = "http_status"
	failConnect      = "connect"
	failMalformed    = "malformed_stream"
	failStreamError  = "stream_error"
	failIncomplete   = "incomplete"
	failRefusal      = "refusal"
	failNoCompletion = "no_completion"
)

const (
	defaultHTTPTimeout = 30 * time.Second
	// maxErrorBody is how much of a non-2xx body is read (so that the
	// connection can be reused) before it is dropped unread by anyone: an
	// error body may echo the request, credential included.
	maxErrorBody = 4 << 10
)

// client is what the two OpenAI kinds share: the checked config, the
// endpoint and an HTTP client of their own.
type client struct {
	cfg  Config
	base string // BaseURL without a trailing "/"
	http *http.Client
}

// badConfig is a configuration error. It names the provider and what is
// wrong, never a value that might carry a credential.
func badConfig(cfg Config, format string, args ...any) error {
	if cfg.ID == "" {
		return fmt.Errorf("provider: "+format, args...)
	}
	return fmt.Errorf("provider %q: "+format, append([]any{cfg.ID}, args...)...)
}

// newClient checks the config an OpenAI kind needs and builds its client.
func newClient(cfg Config) (*client, error) {
	// The parse error would quote the URL; so would a message naming it.
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return nil, badConfig(cfg, "base_url must be an absolute http or https URL")
	}
	if u.User != nil {
		return nil, badConfig(cfg, "base_url must carry no user or password (the key comes from api_key_env)")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, badConfig(cfg, "base_url must have no query or fragment (the endpoint paths are appended to it)")
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, badConfig(cfg, "model is required for kind %s", cfg.Kind)
	}
	if cfg.MaxOutputTokens < 0 {
		return nil, badConfig(cfg, "max output tokens must not be negative")
	}
	if cfg.HTTPTimeout < 0 {
		return nil, badConfig(cfg, "http timeout must not be negative")
	}
	// net/http would refuse such a header at every request, as a connect
	// failure; say it once, here.
	for i := 0; i < len(cfg.APIKey); i++ {
		if c := cfg.APIKey[i]; c < 0x20 || c == 0x7f {
			return nil, badConfig(cfg, "the API key contains a control character")
		}
	}
	timeout := cfg.HTTPTimeout
	if timeout == 0 {
		timeout = defaultHTTPTimeout
	}
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	return &client{
		cfg:  cfg,
		base: strings.TrimSuffix(cfg.BaseURL, "/"),
		http: &http.Client{
			// Connecting and the response headers are bounded; the body is
			// not (a stream lasts as long as the model writes, and the
			// caller's context bounds the turn).
			Transport: &http.Transport{
				Proxy:                 http.ProxyFromEnvironment, // as the default transport does
				DialContext:           dialer.DialContext,
				TLSHandshakeTimeout:   timeout,
				ResponseHeaderTimeout: timeout,
				ForceAttemptHTTP2:     true,
				MaxIdleConns:          8,
				IdleConnTimeout:       90 * time.Second,
				ExpectContinueTimeout: time.Second,
			},
			// A redirect is answered as what it is (http_status 3xx): the
			// key goes only to the configured endpoint, and a POST is never
			// replayed somewhere else.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

func (c *client) authorize(req *http.Request) {
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
}

// post sends a turn's one request (there are no retries). It returns the
// response when it is a 2xx event stream, or else the Result that ends the
// turn.
func (c *client) post(ctx context.Context, path string, body any) (*http.Response, *Result) {
	b, err := json.Marshal(body)
	if err != nil {
		panic(err) // our request types always marshal
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return nil, &Result{ErrorKind: failConnect} // not with a base URL newClient accepted
	}
	c.authorize(req)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &Result{Stopped: true}
		}
		return nil, &Result{ErrorKind: failConnect}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		discard(resp.Body)
		return nil, &Result{ErrorKind: failHTTPStatus, Status: resp.StatusCode}
	}
	// A server that ignored "stream": true answers with one JSON document;
	// we asked for a stream and read only streams.
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		discard(resp.Body)
		return nil, &Result{ErrorKind: failMalformed}
	}
	return resp, nil
}

// discard reads at most maxErrorBody bytes of body, drops them, and closes
// it.
func discard(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxErrorBody))
	body.Close()
}

// errStopped is what events returns when ctx ended before the stream did.
var errStopped = errors.New("provider: stopped")

// events hands resp's events to fn, in order, until fn returns true (nil:
// the turn ended) or the stream ends: io.EOF at a clean end of the body,
// errStopped when ctx ended (the body is closed at once: a blocked read
// returns), errSSETooLong, or the read error of a cut connection. The body
// is closed when it returns.
func events(ctx context.Context, resp *http.Response, fn func(sseEvent) bool) error {
	defer resp.Body.Close()
	stop := context.AfterFunc(ctx, func() { resp.Body.Close() })
	defer stop()
	sr := newSSEReader(resp.Body, maxSSELine, maxSSEEvent)
	for {
		ev, err := sr.next()
		if err != nil {
			if ctx.Err() != nil {
				return errStopped
			}
			return err
		}
		if fn(ev) {
			return nil
		}
	}
}

// check lists the models: 2xx is usable. The error names the status or
// the network failure, never the URL's path or a credential.
func (c *client) check(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/models", nil)
	if err != nil {
		return badConfig(c.cfg, "list models: bad base_url")
	}
	c.authorize(req)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		} else if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err // without "Get <url>:"
		}
		return badConfig(c.cfg, "list models: %w", err)
	}
	discard(resp.Body)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return badConfig(c.cfg, "list models: HTTP %d", resp.StatusCode)
	}
	return nil
}

// parseUsage decodes a usage object of either API's names (Responses:
// input/output_tokens; Chat: prompt/completion_tokens). It returns nil
// for null, for an object it cannot read (usage is reported, never
// relied on: a dialect's odd usage does not fail a turn), and for one that
// counts nothing.
func parseUsage(raw json.RawMessage) *Usage {
	if len(raw) == 0 {
		return nil
	}
	var u struct {
		InputTokens      int64 `json:"input_tokens"`
		OutputTokens     int64 `json:"output_tokens"`
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		TotalTokens      int64 `json:"total_tokens"`
	}
	if json.Unmarshal(raw, &u) != nil {
		return nil
	}
	out := Usage{
		InputTokens:  max(u.InputTokens, u.PromptTokens),
		OutputTokens: max(u.OutputTokens, u.CompletionTokens),
		TotalTokens:  u.TotalTokens,
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.InputTokens + out.OutputTokens
	}
	if out == (Usage{}) {
		return nil
	}
	return &out
}

// jsonString decodes raw as a string: "" for absent or null, false when
// it is something else.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
