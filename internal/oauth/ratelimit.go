package oauth

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// A bucket is a token-bucket rate: so many per minute, with a burst.
type bucket struct {
	perMinute, burst int
}

func (b bucket) limiter() *rate.Limiter {
	return rate.NewLimiter(rate.Every(time.Minute/time.Duration(b.perMinute)), b.burst)
}

// Dynamic registration is open to anyone; these bound how fast one address,
// and everyone together, can make clients (the Server also caps the
// unused ones it keeps).
var (
	registerPerAddr = bucket{perMinute: 10, burst: 10}
	registerGlobal  = bucket{perMinute: 60, burst: 60}
)

// maxAddrs bounds the per-address buckets kept; past it the full ones (of
// addresses that have been quiet) are forgotten, and when none is, a new
// address is not remembered: only the global bucket bounds it.
const maxAddrs = 4096

// limiter is a per-address and a global token bucket.
type limiter struct {
	now     func() time.Time
	perAddr bucket
	global  *rate.Limiter

	mu    sync.Mutex
	addrs map[netip.Prefix]*rate.Limiter
}

func newLimiter(now func() time.Time, perAddr, global bucket) *limiter {
	return &limiter{now: now, perAddr: perAddr, global: global.limiter(), addrs: map[netip.Prefix]*rate.Limiter{}}
}

// allow takes a token for the request's remote address, and one from the
// global bucket. The address is the connection's: a forwarded-for header
// is anyone's to write. Behind a reverse proxy every request shares the
// proxy's address, and the global bound is what remains.
func (l *limiter) allow(r *http.Request) bool {
	now := l.now()
	key := addrKey(r.RemoteAddr)
	l.mu.Lock()
	b := l.addrs[key]
	if b == nil {
		if len(l.addrs) >= maxAddrs {
			for k, v := range l.addrs {
				if v.TokensAt(now) >= float64(l.perAddr.burst) {
					delete(l.addrs, k)
				}
			}
		}
		b = l.perAddr.limiter()
		if len(l.addrs) < maxAddrs {
			l.addrs[key] = b
		}
	}
	ok := b.AllowN(now, 1)
	l.mu.Unlock()
	return ok && l.global.AllowN(now, 1)
}

// addrKey groups remote addresses: an IPv4 address alone, an IPv6 address
// by its /64 (one host commonly holds a whole /64).
func addrKey(remote string) netip.Prefix {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	ip = ip.Unmap().WithZone("")
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}
