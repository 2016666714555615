// Package provider runs one delegated turn on a configured model API or
// ACP agent (CONTRACT.md §6): openai-responses (the OpenAI Responses API,
// streaming), openai-chat (any OpenAI-compatible Chat Completions endpoint,
// streaming) and acp (an Agent Client Protocol agent started as a
// subprocess). Each streams what the model produces to a Sink as it
// arrives and says how the turn ended; the run service (internal/run) owns
// the record, the log, cancellation and timeouts.
//
// A turn succeeds only on a normal completion (Responses:
// response.completed; Chat: finish reason "stop" and the end of the stream;
// ACP: stop reason end_turn). Everything else is a failure with a fixed
// ErrorKind; a provider's error body, and any credential, never reaches the
// Sink, the Result or an error. There are no retries.
package provider

import (
	"context"
	"strings"
	"time"

	"github.com/continuo-dev/continuo/internal/redact"
)

// The provider kinds.
const (
	KindResponses = "openai-responses"
	KindChat      = "openai-chat"
	KindACP       = "acp"
)

// Kinds lists every provider kind, in order.
func Kinds() []string { return []string{KindResponses, KindChat, KindACP} }

// New returns the provider cfg configures, after checking cfg; the error
// names what is wrong, never a credential.
//
// The credentials cfg carries (the API key, and the values of an agent's
// environment whose names name secrets) are registered with the redactor
// first: a provider that echoes its key back, in an error body or in a
// model's text, cannot get it into a run's log, a note or a brief,
// whatever the key's shape (redact.Register).
func New(cfg Config) (Provider, error) {
	redact.Register(cfg.APIKey)
	for _, kv := range cfg.Env {
		if name, value, ok := strings.Cut(kv, "="); ok {
			redact.RegisterNamed(name, value)
		}
	}
	switch cfg.Kind {
	case KindResponses:
		return newResponses(cfg)
	case KindChat:
		return newChat(cfg)
	case KindACP:
		return newACP(cfg)
	default:
		return nil, badConfig(cfg, "unknown kind %q (one of %s)", cfg.Kind, strings.Join(Kinds(), ", "))
	}
}

// Config is one configured provider (the config file's [[providers]]).
type Config struct {
	ID          string
	Kind        string
	Description string
	// BaseURL and Model address an OpenAI kind ("…/v1"); Model is shown
	// for ACP too when set.
	BaseURL string
	Model   string
	// APIKey is the credential, read by the caller from the environment
	// variable the config names; "" for endpoints that need none.
	APIKey string
	// MaxOutputTokens bounds a turn's output (0: the API's default).
	MaxOutputTokens int
	// Command is an ACP agent's argv; Env the agent's whole environment
	// (NAME=value), built by the caller from the config's explicit
	// mapping — nothing else of the server's environment is passed.
	Command []string
	Env     []string
	// AllowTools are the ACP tool kinds whose permission requests are
	// allowed (e.g. "read", "search"); every other request is rejected.
	AllowTools []string
	// HTTPTimeout bounds connecting and the response headers (0: 30 s);
	// the turn as a whole is bounded by the caller's context.
	HTTPTimeout time.Duration
}

// Request is one turn.
type Request struct {
	Prompt string // the final prompt, at most 64 KiB
	Dir    string // the working directory of an ACP agent (the project root or the session's worktree)
	// MCP, when set, is given to an ACP agent in session/new as an HTTP MCP
	// server, so that it can read and record in Continuo with a token
	// minted for this run.
	MCP *MCPServer
}

// MCPServer is Continuo as an MCP server for one run.
type MCPServer struct {
	Name  string
	URL   string
	Token string // a bearer token; sent as the Authorization header, never logged
}

// Sink receives what a turn produces, in order, as it arrives. Text is the
// model's answer (a refusal's text too: what the model said instead, with
// Result saying refusal); Event is anything else worth showing (kind
// "tool": a tool call and its status; "permission": a permission request
// and the decision; "thought": reasoning text the model or agent shares).
// Calls come from one goroutine.
type Sink interface {
	Text(s string)
	Event(kind, text string)
}

// Result is how a turn ended.
type Result struct {
	// ErrorKind is "" on a normal completion; else one fixed word:
	// http_status (with Status), connect, malformed_stream, stream_error
	// (an error event mid-stream), incomplete (max tokens, a content
	// filter), refusal, no_completion (the stream ended without one),
	// process_exited, protocol_error.
	ErrorKind string
	Status    int // the HTTP status of http_status
	// Stopped says the turn ended because ctx ended (the stream was
	// closed, or ACP session/cancel answered with stopReason cancelled or
	// the agent was stopped): the caller records why.
	Stopped bool
	Usage   *Usage
}

// Usage is the token usage a provider reported.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// Provider runs turns.
type Provider interface {
	Config() Config
	// Run runs one turn, streaming to sink, and returns when it ended.
	Run(ctx context.Context, req Request, sink Sink) Result
	// Check says whether the provider is reachable and usable (an OpenAI
	// kind lists its models; an ACP agent is started and initialized),
	// with an error that names no credential.
	Check(ctx context.Context) error
}
