package oauth

import (
	"errors"
	"net/http"
	"net/netip"
	"testing"
)

func TestPublicAddr(t *testing.T) {
	for _, c := range []struct {
		addr           string
		public, onTest bool // with the real rules; with the test CA (loopback allowed)
	}{
		// Public unicast.
		{"1.1.1.1", true, true},
		{"8.8.8.8", true, true},
		{"93.184.215.14", true, true},
		{"100.63.255.255", true, true},  // just below CGNAT
		{"100.128.0.0", true, true},     // just above
		{"172.15.255.255", true, true},  // just below 172.16/12
		{"172.32.0.0", true, true},      // just above
		{"198.17.255.255", true, true},  // just below benchmarking
		{"198.20.0.0", true, true},      // just above
		{"223.255.255.255", true, true}, // the last before multicast
		{"2606:4700:4700::1111", true, true},
		{"2001:4860:4860::8888", true, true},
		{"::ffff:1.1.1.1", true, true},
		{"64:ff9b::101:101", true, true}, // NAT64 of 1.1.1.1
		// Loopback: only with the test CA.
		{"127.0.0.1", false, true},
		{"127.1.2.3", false, true},
		{"::1", false, true},
		{"::ffff:127.0.0.1", false, true},
		// Never.
		{"0.0.0.0", false, false},
		{"0.1.2.3", false, false},
		{"10.0.0.1", false, false},
		{"10.255.255.255", false, false},
		{"172.16.0.1", false, false},
		{"172.31.255.255", false, false},
		{"192.168.0.1", false, false},
		{"169.254.169.254", false, false}, // cloud metadata
		{"100.64.0.1", false, false},
		{"100.127.255.255", false, false},
		{"192.0.0.1", false, false},
		{"192.0.2.1", false, false},
		{"198.51.100.1", false, false},
		{"203.0.113.1", false, false},
		{"198.18.0.1", false, false},
		{"198.19.255.255", false, false},
		{"192.88.99.1", false, false},
		{"224.0.0.1", false, false},
		{"239.255.255.250", false, false},
		{"240.0.0.1", false, false},
		{"255.255.255.255", false, false},
		{"::", false, false},
		{"fc00::1", false, false},
		{"fd12:3456::1", false, false},
		{"fe80::1", false, false},
		{"fe80::1%eth0", false, false},
		{"fec0::1", false, false},
		{"ff02::1", false, false},
		{"ff05::2", false, false},
		{"2001:db8::1", false, false},
		{"3fff::1", false, false},
		{"2001::1", false, false},       // Teredo
		{"2001:2::1", false, false},     // benchmarking
		{"2002:a00:1::1", false, false}, // 6to4 of 10.0.0.1
		{"100::1", false, false},
		{"::7f00:1", false, false},           // IPv4-compatible 127.0.0.1
		{"::a00:1", false, false},            // IPv4-compatible 10.0.0.1
		{"64:ff9b::a00:1", false, false},     // NAT64 of 10.0.0.1
		{"64:ff9b::a9fe:a9fe", false, false}, // NAT64 of 169.254.169.254
		{"64:ff9b:1::1", false, false},
		// IPv4-mapped forms of each IPv4 kind.
		{"::ffff:0.0.0.0", false, false},
		{"::ffff:10.0.0.1", false, false},
		{"::ffff:172.16.0.1", false, false},
		{"::ffff:192.168.0.1", false, false},
		{"::ffff:169.254.169.254", false, false},
		{"::ffff:100.64.0.1", false, false},
		{"::ffff:192.0.2.1", false, false},
		{"::ffff:198.51.100.1", false, false},
		{"::ffff:203.0.113.1", false, false},
		{"::ffff:198.18.0.1", false, false},
		{"::ffff:224.0.0.1", false, false},
		{"::ffff:255.255.255.255", false, false},
	} {
		a := netip.MustParseAddr(c.addr)
		if got := publicAddr(a, false); got != c.public {
			t.Errorf("publicAddr(%s) = %v, want %v", c.addr, got, c.public)
		}
		if got := publicAddr(a, true); got != c.onTest {
			t.Errorf("publicAddr(%s, loopback allowed) = %v, want %v", c.addr, got, c.onTest)
		}
	}
}

func TestCheckDialAddr(t *testing.T) {
	for _, c := range []struct {
		network, address string
		ok               bool
	}{
		{"tcp4", "1.1.1.1:443", true},
		{"tcp6", "[2606:4700:4700::1111]:443", true},
		{"tcp4", "127.0.0.1:443", false},
		{"tcp6", "[::1]:443", false},
		{"tcp6", "[fe80::1%eth0]:443", false},
		{"udp4", "1.1.1.1:443", false},
		{"unix", "/run/x.sock", false},
		{"tcp4", "example.com:443", false}, // never a name: the dialer resolves first
		{"tcp4", "1.1.1.1", false},
	} {
		err := checkDialAddr(c.network, c.address, false)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, errDocAddress) {
			t.Errorf("checkDialAddr(%s, %s) = %v", c.network, c.address, err)
		}
	}
}

// The fetcher never uses a proxy: one would dial on our behalf, unchecked.
func TestFetcherTransport(t *testing.T) {
	f, err := NewClientDocFetcher(FetcherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr := f.client.Transport.(*http.Transport)
	if tr.Proxy != nil || tr.DialContext == nil || tr.DialTLSContext != nil || tr.TLSClientConfig.InsecureSkipVerify ||
		f.client.Jar != nil || f.client.CheckRedirect == nil || f.timeout != docTimeout || f.maxBytes != 16<<10 {
		t.Fatalf("%+v %+v", f, tr)
	}
}
