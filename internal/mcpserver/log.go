package mcpserver

import (
	"context"
	"log/slog"
	"time"

	"github.com/continuo-dev/continuo"
)

// protocolLogger is the logger the MCP SDK gets: its informational records
// (a session connected, initialized, disconnected — two for every
// connection) are debug; its warnings and errors stay what they are.
func protocolLogger(l *slog.Logger) *slog.Logger { return slog.New(demoted{l.Handler()}) }

type demoted struct{ next slog.Handler }

func demote(l slog.Level) slog.Level {
	if l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}

func (d demoted) Enabled(ctx context.Context, l slog.Level) bool {
	return d.next.Enabled(ctx, demote(l))
}

func (d demoted) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return d.next.Handle(ctx, r)
}

func (d demoted) WithAttrs(as []slog.Attr) slog.Handler { return demoted{d.next.WithAttrs(as)} }
func (d demoted) WithGroup(name string) slog.Handler    { return demoted{d.next.WithGroup(name)} }

// logCall writes the one line of a tool call: the tool, who called (the
// principal's name; never a credential or an argument), how long it took
// and its outcome (ok, cancelled, or the error code).
func (s *server) logCall(ctx context.Context, tool string, c *continuo.Caller, took time.Duration, outcome string) {
	principal := ""
	if c != nil {
		principal = c.Principal
	}
	s.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "tool call", slog.String("tool", tool), slog.String("principal", principal),
		slog.Duration("duration", took), slog.String("outcome", outcome))
}
