package run

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/provider"
	"github.com/continuo-dev/continuo/internal/redact"
)

// AgentSpec is the spec of an agent run: what was asked of which provider.
// The prompt is the final one (instruction and quoted context, redacted),
// at most MaxPrompt bytes.
type AgentSpec struct {
	ProviderID  string `json:"provider_id"`
	Prompt      string `json:"prompt"`
	TimeoutSecs int    `json:"timeout_secs"`
	// MCP asks for Continuo to be attached to an ACP agent for this run.
	MCP bool `json:"mcp,omitempty"`
	// RecordingSessionID is the session the run's answer is posted to as
	// one note when it succeeds ("" for none).
	RecordingSessionID string `json:"recording_session_id,omitempty"`
}

// MaxPrompt bounds an agent run's final prompt (CONTRACT.md §6).
const MaxPrompt = 64 << 10

// JSON is the spec as a run stores it.
func (a AgentSpec) JSON() string {
	b, _ := json.Marshal(a)
	return string(b)
}

// Agents executes agent runs on the configured providers. At most
// Limit(provider) of one provider's runs execute at once in this process;
// the dispatcher leaves the rest queued (Admit).
type Agents struct {
	Providers map[string]provider.Provider
	Limits    map[string]int // per provider; ≤ 0 means 1
	// Attach, when set, makes the MCP server an ACP agent is given for a
	// run (a token minted for it) and returns a function that revokes it.
	Attach func(ctx context.Context, r *continuo.Run) (*provider.MCPServer, func(), error)
	// Record, when set, posts a successful run's answer to its recording
	// session.
	Record func(ctx context.Context, r *continuo.Run, answer string) error

	mu      sync.Mutex
	running map[string]int // by provider
}

// Admit implements Admitter: a run starts only while its provider has a
// free slot in this process, and takes it.
func (x *Agents) Admit(r *continuo.Run) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	limit := x.Limits[r.ProviderID]
	if limit <= 0 {
		limit = 1
	}
	if x.running == nil {
		x.running = map[string]int{}
	}
	if x.running[r.ProviderID] >= limit {
		return false
	}
	x.running[r.ProviderID]++
	return true
}

// Release implements Admitter.
func (x *Agents) Release(r *continuo.Run) {
	x.mu.Lock()
	x.running[r.ProviderID]--
	x.mu.Unlock()
}

// Execute implements Executor.
func (x *Agents) Execute(ctx context.Context, r *continuo.Run, log *Log) Outcome {
	var spec AgentSpec
	if err := json.Unmarshal([]byte(r.Spec), &spec); err != nil || spec.Prompt == "" {
		log.State("the run's spec is not an agent request")
		return Outcome{ErrorKind: "invalid_spec"}
	}
	p := x.Providers[spec.ProviderID]
	if p == nil {
		log.State("provider " + spec.ProviderID + " is not configured on this server")
		return Outcome{ErrorKind: "provider_unavailable"}
	}
	req := provider.Request{Prompt: spec.Prompt, Dir: r.Dir}
	if spec.MCP && x.Attach != nil {
		mcp, revoke, err := x.Attach(ctx, r)
		if err != nil {
			log.s.log.Error("runs: attach Continuo to an agent", "run", r.ID, "err", err)
			log.State("Continuo could not be attached to the agent")
		} else {
			defer revoke()
			req.MCP = mcp
		}
	} else if spec.MCP {
		log.State("Continuo is not attached: this server has no HTTP endpoint for the agent (continuo stdio)")
	}
	sink := newAgentSink(log.Write)
	res := p.Run(ctx, req, sink)
	answer := sink.close()
	out := Outcome{Stopped: res.Stopped, Succeeded: res.ErrorKind == "" && !res.Stopped, ErrorKind: res.ErrorKind}
	if res.Usage != nil {
		b, _ := json.Marshal(res.Usage)
		out.Usage = string(b)
		log.Write(continuo.EventUsage, string(b)+"\n")
	}
	if res.Status != 0 && res.ErrorKind == "http_status" {
		log.State("the provider answered HTTP " + strconv.Itoa(res.Status))
	}
	if out.Succeeded && spec.RecordingSessionID != "" && x.Record != nil {
		if err := x.Record(context.WithoutCancel(ctx), r, answer); err != nil {
			log.s.log.Error("runs: record an agent's answer in its session", "run", r.ID, "err", err)
			log.State("the answer could not be recorded in the session")
		}
	}
	return out
}

// agentSink turns what a provider streams into log events, each kind
// through its own redacting stream, and keeps the answer (redacted, at most
// MaxRunKept bytes) for a recording session.
//
// The model's text is shown live: besides the whole lines the stream
// emits, the start of the line being written is released early, up to its
// last blank, when that part is provably final — the stream holds nothing
// else, the part redacts to itself, and it holds nothing that can begin a
// secret reaching past it (a quote, a backslash, "-----", a long run of
// token characters). When the stream then emits the whole line, the
// released start is not emitted again.
type agentSink struct {
	write   func(kind continuo.RunEventKind, text string) // the log's Write
	streams map[continuo.RunEventKind]*redact.Stream
	answer  []byte
	early   string // the released start of the current text line (raw = redacted)
}

func newAgentSink(write func(kind continuo.RunEventKind, text string)) *agentSink {
	return &agentSink{write: write, streams: map[continuo.RunEventKind]*redact.Stream{}}
}

func (s *agentSink) stream(kind continuo.RunEventKind) *redact.Stream {
	st := s.streams[kind]
	if st == nil {
		st = redact.NewStream(func(text string) {
			if kind == continuo.EventText && s.early != "" {
				// The line's start went out early; its redaction is the
				// same text (that is why it went), so skip it here.
				if t, ok := strings.CutPrefix(text, s.early); ok {
					text = t
				}
				s.early = ""
				if text == "" {
					return
				}
			}
			s.emit(kind, text)
		})
		s.streams[kind] = st
	}
	return st
}

func (s *agentSink) emit(kind continuo.RunEventKind, text string) {
	if kind == continuo.EventText && len(s.answer) < continuo.MaxRunKept {
		s.answer = append(s.answer, text...)
	}
	s.write(kind, text)
}

// Text implements provider.Sink.
func (s *agentSink) Text(text string) {
	st := s.stream(continuo.EventText)
	_, _ = st.Write([]byte(text))
	line, ok := st.Pending()
	if !ok || !strings.HasPrefix(line, s.early) {
		return
	}
	cut := strings.LastIndexAny(line, " \t")
	if cut < len(s.early) {
		return
	}
	part := line[len(s.early) : cut+1]
	whole := line[:cut+1]
	if !releasable(whole) {
		return
	}
	s.early = whole
	s.emit(continuo.EventText, part)
}

// releasable reports whether the start of a line may be shown before the
// line ends: it redacts to itself and holds nothing that can begin a secret
// that reaches into what comes after it.
func releasable(start string) bool {
	if strings.ContainsAny(start, "\"'`\\") || strings.Contains(start, "-----") || !utf8.ValidString(start) ||
		strings.IndexByte(start, 0) >= 0 {
		return false
	}
	run := 0
	for i := 0; i < len(start); i++ {
		c := start[i]
		if c == '_' || c == '-' || c == '+' || c == '/' || c == '=' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			if run++; run >= 16 {
				return false // a token's length: an AWS secret is judged with what follows it
			}
		} else {
			run = 0
		}
	}
	out, changed := redact.String(start)
	return !changed && out == start
}

// Event implements provider.Sink: one line per event.
func (s *agentSink) Event(kind, text string) {
	k := continuo.RunEventKind(kind)
	if !k.Valid() || k == continuo.EventOutput || k == continuo.EventUsage {
		k = continuo.EventTool
	}
	_, _ = s.stream(k).Write([]byte(oneLine(text) + "\n"))
}

// close flushes every stream and returns the answer.
func (s *agentSink) close() string {
	for _, k := range continuo.RunEventKinds() {
		if st := s.streams[k]; st != nil {
			st.Close()
		}
	}
	return string(s.answer)
}

func oneLine(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
	if len(b) > 1024 {
		b = b[:cutAt(string(b), 1024)]
	}
	return string(b)
}
