package redact

import (
	"context"
	"log/slog"
)

// Handler returns a slog.Handler that passes each record to h with its
// message and every string attribute redacted (String; the values of
// attributes whose key names a secret, whole, as Value does for maps).
// Continuo logs no text a user wrote, and errors only as "internal error"
// at the edges; this is the second line, so that a credential in an error
// (a provider's, say) or a known value is never written to a log.
func Handler(h slog.Handler) slog.Handler { return &handler{h} }

type handler struct{ next slog.Handler }

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	msg, _ := String(r.Message)
	out := slog.NewRecord(r.Time, r.Level, msg, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = redactAttr(a)
	}
	return &handler{h.next.WithAttrs(red)}
}

func (h *handler) WithGroup(name string) slog.Handler { return &handler{h.next.WithGroup(name)} }

// redactAttr redacts an attribute's value: strings, errors and other
// values printed as text (their text is what the log would show), and
// groups, recursively.
func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		as := v.Group()
		red := make([]slog.Attr, len(as))
		for i, x := range as {
			red[i] = redactAttr(x)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(red...)}
	case slog.KindString, slog.KindAny:
		s := v.String()
		if keyedSecret(a.Key, s) {
			return slog.String(a.Key, Placeholder)
		}
		if r, changed := String(s); changed {
			return slog.String(a.Key, r)
		}
		if v.Kind() == slog.KindAny {
			return a // unchanged: keep the value as it was (its type, for a JSON handler)
		}
	}
	return a
}
