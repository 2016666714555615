package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/swarm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The carrier of a swarm call (CONTRACT.md §2) is resolved, in order, from
// a host conversation key in the request's _meta that the operator marked
// trusted, the MCP session (the Mcp-Session-Id the web layer has checked,
// or this stdio connection), and last the call's own carrier_key — the
// only identity a stateless (2026-07-28) request has.

type requestKey struct{}

// withRequest keeps a tool call's request in its context, for the tools
// that need more of it than the arguments (the carrier, progress).
func withRequest(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	return context.WithValue(ctx, requestKey{}, req)
}

func requestOf(ctx context.Context) *mcp.CallToolRequest {
	req, _ := ctx.Value(requestKey{}).(*mcp.CallToolRequest)
	return req
}

// newStdioCarrier names one stdio connection: a stdio server serves one.
func newStdioCarrier() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// carrier resolves the calling conversation's identity. key is the call's
// carrier_key argument ("" when none was given).
func (s *server) carrier(ctx context.Context, key string) (swarm.Carrier, error) {
	req := requestOf(ctx)
	if name := s.opts.TrustedCarrierMeta; name != "" && req != nil && req.Params != nil {
		if v, ok := req.Params.Meta[name].(string); ok && v != "" {
			if len(v) > maxCarrierKey {
				return swarm.Carrier{}, continuo.Invalid("_meta."+name, "must be at most %d bytes", maxCarrierKey)
			}
			return swarm.Carrier{Source: continuo.CarrierFromMeta, Key: v}, nil
		}
	}
	if s.stdioCarrier != "" {
		return swarm.Carrier{Source: continuo.CarrierFromSession, Key: s.stdioCarrier}, nil
	}
	if req != nil && req.Extra != nil && req.Extra.Header != nil && req.Extra.Header.Get("Mcp-Protocol-Version") < statelessFrom {
		// On the stateless protocol nothing checked the header (there are
		// no sessions): it names no carrier.
		if id := req.Extra.Header.Get("Mcp-Session-Id"); id != "" {
			return swarm.Carrier{Source: continuo.CarrierFromSession, Key: id}, nil
		}
	}
	if req != nil && req.Session != nil {
		if id := req.Session.ID(); id != "" {
			return swarm.Carrier{Source: continuo.CarrierFromSession, Key: id}, nil
		}
	}
	if key == "" {
		return swarm.Carrier{}, nil // the service says what is missing, where it matters
	}
	if len(key) < continuo.MinCarrierKey {
		return swarm.Carrier{}, continuo.Invalid("carrier_key", "must be at least %d bytes of a random value (128 bits or more)", continuo.MinCarrierKey).
			With("min_bytes", continuo.MinCarrierKey)
	}
	return swarm.Carrier{Source: continuo.CarrierFromKey, Key: key}, nil
}

// maxCarrierKey bounds a carrier key, from the arguments or _meta.
const maxCarrierKey = 128

// statelessFrom is the first MCP protocol version without sessions (as
// web routes it).
const statelessFrom = "2026-07-28"

// progress returns what tells a waiting call's client how long it has
// waited, when the client gave a progress token; nil otherwise.
func progress(ctx context.Context, message string) swarm.Progress {
	req := requestOf(ctx)
	if req == nil || req.Params == nil || req.Session == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	return func(waited, of time.Duration) {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
			Progress: waited.Seconds(), Total: of.Seconds(), Message: message})
	}
}
