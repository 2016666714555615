package oauth

import (
	"errors"
	"fmt"
	"net/netip"
)

// errDocAddress is why the metadata fetcher's dialer refused an address.
var errDocAddress = errors.New("address is not public unicast")

// docBlockedPrefixes are the ranges that are not public unicast besides
// those netip names (loopback, RFC 1918 and RFC 4193 private, link-local,
// multicast, unspecified, broadcast). IPv4-mapped IPv6 addresses are
// unmapped before the check, so each IPv4 range covers its mapped form.
var docBlockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT shared space (RFC 6598)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1)
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast (deprecated)
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the broadcast address
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated): ::a.b.c.d reaches a.b.c.d
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64 (RFC 8215)
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments: Teredo, benchmarking, ORCHID
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4: reaches the IPv4 address it embeds
	netip.MustParsePrefix("3fff::/20"),       // documentation (RFC 9637)
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
}

// nat64 is the well-known NAT64 prefix (RFC 6052): DNS64 synthesises these
// for IPv4-only hosts on IPv6-only networks, so the IPv4 address inside is
// what is reached, and what is checked.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// publicAddr reports whether a is a public unicast address, the only kind
// the metadata fetcher dials (allowLoopback: also loopback, for tests).
func publicAddr(a netip.Addr, allowLoopback bool) bool {
	a = a.Unmap().WithZone("")
	if allowLoopback && a.IsLoopback() {
		return true
	}
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:]))
	}
	if !a.IsGlobalUnicast() || a.IsPrivate() {
		return false
	}
	for _, p := range docBlockedPrefixes {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// checkDialAddr is the fetcher's net.Dialer Control: it runs on the
// address about to be connected, after name resolution, so a name that
// resolves (or is rebound) to a private address cannot slip through.
func checkDialAddr(network, address string, allowLoopback bool) error {
	if network != "tcp4" && network != "tcp6" {
		return fmt.Errorf("%w: network %s", errDocAddress, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !publicAddr(ap.Addr(), allowLoopback) {
		return fmt.Errorf("%w: %s", errDocAddress, address)
	}
	return nil
}
