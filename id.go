package continuo

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"sync"
	"time"
)

// ID prefixes (CONTRACT.md §1). Every ID is prefix + 26 characters of
// Crockford base32 over a UUIDv7, so IDs sort by creation time, carry their
// type, and move unchanged between SQLite and PostgreSQL.
const (
	PrefixProject   = "prj_"
	PrefixSession   = "ses_"
	PrefixMessage   = "msg_"
	PrefixGoal      = "goal_"
	PrefixRun       = "run_"
	PrefixGroup     = "grp_"
	PrefixPrincipal = "prn_"
	PrefixToken     = "tok_"
	// OAuth 2.1 and browser sign-in (CONTRACT.md §2).
	PrefixOAuthClient = "ocl_"
	PrefixOAuthGrant  = "ogr_"
	PrefixOAuthCode   = "ocd_"
	PrefixOAuthToken  = "otk_"
	PrefixLoginLink   = "lnk_"
	PrefixWebSession  = "wss_"
)

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

var (
	idMu   sync.Mutex
	lastMS int64
	lastRA uint64  // 62 random bits, incremented within one millisecond
	lastRB [2]byte // rand_a (12 bits), fixed within one millisecond
)

// NewID returns a new prefixed, time-sortable ID. Within one millisecond
// successive IDs from this process still sort in creation order (the random
// part is incremented, as UUIDv7 method 2 allows).
func NewID(prefix string, now time.Time) string {
	var b [16]byte
	ms := now.UnixMilli()
	idMu.Lock()
	if ms <= lastMS {
		ms = lastMS
		lastRA++
	} else {
		var r [8]byte
		_, _ = rand.Read(r[:])
		lastMS = ms
		lastRA = binary.BigEndian.Uint64(r[:]) >> 3 // leave room to increment
		_, _ = rand.Read(lastRB[:])
	}
	ra, rb := lastRA, lastRB
	idMu.Unlock()

	binary.BigEndian.PutUint64(b[0:8], uint64(ms)<<16)
	// rand_a stays the same within a millisecond: were it drawn per ID, it
	// would outrank the incremented counter below and break the order.
	b[6] = 0x70 | (rb[0] & 0x0f) // version 7
	b[7] = rb[1]
	binary.BigEndian.PutUint64(b[8:16], ra)
	b[8] = 0x80 | (b[8] & 0x3f) // variant 10
	return prefix + encode(b)
}

// encode writes 128 bits as 26 Crockford base32 characters (the first
// character carries 3 bits), most significant first.
func encode(b [16]byte) string {
	hi := binary.BigEndian.Uint64(b[0:8])
	lo := binary.BigEndian.Uint64(b[8:16])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// ValidID reports whether s is a well-formed ID with the given prefix.
func ValidID(prefix, s string) bool {
	if len(s) != len(prefix)+26 || !strings.HasPrefix(s, prefix) {
		return false
	}
	body := s[len(prefix):]
	if body[0] > '7' { // only 3 bits in the first character
		return false
	}
	for i := 0; i < len(body); i++ {
		if strings.IndexByte(crockford, body[i]) < 0 {
			return false
		}
	}
	return true
}
