package cli

import (
	"net"
	"testing"
)

// The OAuth issuer: the public URL, else the bound loopback address, else
// none (OAuth off).
func TestOAuthIssuer(t *testing.T) {
	tcp := func(s string) net.Addr { a, _ := net.ResolveTCPAddr("tcp", s); return a }
	for _, c := range []struct {
		public string
		bound  net.Addr
		want   string
	}{
		{"https://continuo.example.com/", tcp("0.0.0.0:7300"), "https://continuo.example.com"},
		{"https://continuo.example.com", tcp("127.0.0.1:7300"), "https://continuo.example.com"},
		{"", tcp("127.0.0.1:7300"), "http://127.0.0.1:7300"},
		{"", tcp("[::1]:7301"), "http://[::1]:7301"},
		{"", tcp("0.0.0.0:7300"), ""},
		{"", tcp("192.168.1.5:7300"), ""},
	} {
		if got := oauthIssuer(c.public, c.bound); got != c.want {
			t.Errorf("oauthIssuer(%q, %v) = %q, want %q", c.public, c.bound, got, c.want)
		}
	}
}
