package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// route is how one MCP client session reaches its server, as a load
// balancer in front of it would: the test takes it down while the server
// dies and brings it back up to the restarted server, or to another
// replica. The client session keeps its Mcp-Session-Id throughout; only
// the host its requests go to changes.
type route struct {
	tok    string
	parent context.Context

	mu      sync.Mutex
	host    string             // host:port the requests go to
	ctx     context.Context    // the calls of the current period
	cancel  context.CancelFunc // drops them
	up      chan struct{}      // closed while the route is up
	waiting chan struct{}      // closed once a caller waits for the route to come back
}

func newRoute(ctx context.Context, base, tok string) *route {
	r := &route{tok: tok, parent: ctx}
	r.restore(base)
	return r
}

func (r *route) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	host := r.host
	r.mu.Unlock()
	req = req.Clone(req.Context())
	req.URL.Host, req.Host = host, ""
	req.Header.Set("Authorization", "Bearer "+r.tok)
	return http.DefaultTransport.RoundTrip(req)
}

// down marks the route down, before its server is killed: a call that
// fails from now on waits for the route to come back.
func (r *route) down() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.up, r.waiting = make(chan struct{}), make(chan struct{})
}

// drop ends the calls in flight on a route that is down, as a client whose
// connection broke gives up on them: the SDK would wait forever for the
// answer to a call whose response stream broke (without event IDs there is
// nothing to resume).
func (r *route) drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancel()
}

// restore brings the route up to the server at base.
func (r *route) restore(base string) {
	u, err := url.Parse(base)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.host = u.Host
	r.ctx, r.cancel = context.WithCancel(r.parent)
	if r.up == nil {
		r.up = make(chan struct{})
	}
	close(r.up)
}

// isDown reports whether the route is down.
func (r *route) isDown() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.up:
		return false
	default:
		return true
	}
}

// period returns the context of calls made now, waiting while the route
// is down.
func (r *route) period() (context.Context, error) {
	for {
		r.mu.Lock()
		ctx, up := r.ctx, r.up
		select {
		case <-up:
			r.mu.Unlock()
			return ctx, nil
		default:
		}
		select {
		case <-r.waiting:
		default:
			close(r.waiting)
		}
		r.mu.Unlock()
		select {
		case <-up:
		case <-r.parent.Done():
			return nil, r.parent.Err()
		}
	}
}

// stalled returns a channel closed once a caller waits for the route,
// which is down, to come back.
func (r *route) stalled() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waiting
}

// call calls a tool through the route. lost is true when the call failed
// in transit because the route went down (its server died under it): its
// outcome is unknown, and the route is up again when call returns. Any
// other transport failure is an error.
func (r *route) call(cs *mcp.ClientSession, tool string, args map[string]any) (res result, lost bool, err error) {
	ctx, err := r.period()
	if err != nil {
		return res, false, err
	}
	res, err = tryCall(ctx, cs, tool, args)
	if err == nil {
		return res, false, nil
	}
	// A call of a period that was dropped failed with its server, even if
	// the route is up again by the time its failure is seen.
	if ctx.Err() == nil && !r.isDown() {
		return res, false, fmt.Errorf("%s: %w", tool, err)
	}
	if _, err := r.period(); err != nil {
		return res, true, err
	}
	return res, true, nil
}

// dialRoute opens a stateful (2025-11-25) MCP client session through a
// route, on the endpoint of a toolset (swarm for an owner, worker for a
// worker). It opens no standalone SSE stream: when the server dies, the end
// of that stream fails the whole client session (the SDK, told not to
// retry, gives up on it), while without it the session outlives its
// server — its ID is signed, so a restarted server and every replica serve
// it, and the worker it carries stays the same worker.
func dialRoute(t *testing.T, r *route, base, toolset string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-swarm", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: at(base+"/mcp", toolset), HTTPClient: &http.Client{Transport: r},
		MaxRetries: -1, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect %s: %v", base, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// swarmCall calls a tool through r, or straight (r nil: a connection that
// is never cut, where any transport failure is an error).
func swarmCall(ctx context.Context, r *route, cs *mcp.ClientSession, tool string, args map[string]any) (result, bool, error) {
	if r != nil {
		return r.call(cs, tool, args)
	}
	res, err := tryCall(ctx, cs, tool, args)
	if err != nil {
		err = fmt.Errorf("%s: %w", tool, err)
	}
	return res, false, err
}

// cut takes routes down, runs kill, and drops the calls in flight.
func cut(kill func(), routes ...*route) {
	for _, r := range routes {
		r.down()
	}
	kill()
	for _, r := range routes {
		r.drop()
	}
}
