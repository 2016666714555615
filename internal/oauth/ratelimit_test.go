package oauth

import (
	"net/http/httptest"
	"testing"
	"time"
)

// The limiter holds each address to its bucket, and everyone to the
// global one; time refills both.
func TestLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLimiter(func() time.Time { return now }, bucket{perMinute: 2, burst: 2}, bucket{perMinute: 3, burst: 3})
	from := func(addr string) bool {
		r := httptest.NewRequest("POST", "/oauth/register", nil)
		r.RemoteAddr = addr
		return l.allow(r)
	}
	if !from("192.0.2.1:1000") || !from("192.0.2.1:2000") || from("192.0.2.1:3000") {
		t.Error("one address: want two allowed, then refused")
	}
	if !from("[2001:db8::1]:1") || from("[2001:db8::2]:1") {
		t.Error("a second address: one left in the global bucket, then refused")
	}
	now = now.Add(30 * time.Second) // one token per address, 1.5 global
	if !from("192.0.2.1:1000") || from("192.0.2.1:1000") {
		t.Error("after 30 s: want one more for the first address")
	}
	if addrKey("[2001:db8::1]:1") != addrKey("[2001:db8::ffff]:2") || addrKey("192.0.2.1:1") == addrKey("192.0.2.2:1") {
		t.Error("addrKey: IPv6 by /64, IPv4 by address")
	}
}
