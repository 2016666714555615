package redact

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Value-based redaction. The rules find what looks like a credential; the
// server also knows some secrets as values — the providers' API keys it
// read from the environment, every token it mints, OAuth client secrets,
// the key that signs sessions — and a provider that echoes its key back in
// an error body, or a model that repeats it, must not get it into a run's
// log, a note or a brief, whatever its shape. Register records such a
// value; String removes every occurrence of a registered value, wherever
// the text goes.
//
// The registry keeps no value in the clear: a value is found by its first
// two bytes, its length and a keyed hash of it (hash/maphash, with a seed
// of this process), so a dump of the registry tells nothing of the
// secrets. Values shorter than MinKnown bytes are not registered: a short
// value would also be a word of ordinary text.

// MinKnown is the shortest value Register records.
const MinKnown = 12

// maxMinted bounds the minted values kept (see RegisterMinted); the values
// of the configuration are always kept.
const maxMinted = 4096

type knownValue struct {
	pair   uint16 // the first two bytes
	length int
	sum    uint64 // maphash of the value
}

// knownSet is one immutable state of the registry; Register replaces it.
type knownSet struct {
	pairs   [1 << 16 / 64]uint64    // the first two bytes of a value
	lengths map[uint16][]int        // first two bytes → lengths of values, longest first
	sums    map[uint64]struct{}     // value hashes
	values  []knownValue            // pinned values, then minted ones (oldest first)
	pinned  int                     // how many of values are pinned
	seen    map[knownValue]struct{} // values, for duplicates
}

var known struct {
	mu   sync.Mutex // serializes writers
	seed maphash.Seed
	set  atomic.Pointer[knownSet]
}

func init() { known.seed = maphash.MakeSeed() }

// Register records secret values the server knows (an API key read from
// the environment, a signing key): String redacts every occurrence of
// them from now on, for the life of the process. Values shorter than
// MinKnown bytes, or that are not valid UTF-8, are ignored. Registering a
// value twice does nothing.
func Register(values ...string) { register(true, values) }

// RegisterMinted records secrets the server mints (tokens, tickets,
// invites, OAuth codes and secrets) as Register does, keeping the newest
// 4096 of them: minted secrets also have a shape the rules know (cto_…),
// so the registry is a second line for them, bounded so that a long-lived
// server's memory does not grow with every token it ever issued.
func RegisterMinted(values ...string) { register(false, values) }

// RegisterNamed registers value when name names a secret (as an
// assignment "name=value" would be redacted): an agent's environment
// passes PATH and HOME, which must stay readable, beside API keys.
func RegisterNamed(name, value string) {
	if secretName(name) {
		Register(value)
	}
}

func register(pin bool, values []string) {
	var add []knownValue
	for _, v := range values {
		if len(v) < MinKnown || !utf8.ValidString(v) || strings.Contains(v, Placeholder) {
			continue
		}
		add = append(add, knownValue{pair: uint16(v[0])<<8 | uint16(v[1]), length: len(v), sum: maphash.String(known.seed, v)})
	}
	if len(add) == 0 {
		return
	}
	known.mu.Lock()
	defer known.mu.Unlock()
	old := known.set.Load()
	var pinned, minted []knownValue
	seen := map[knownValue]struct{}{}
	if old != nil {
		pinned = slices.Clone(old.values[:old.pinned])
		minted = slices.Clone(old.values[old.pinned:])
		seen = old.seen
	}
	fresh := make(map[knownValue]struct{}, len(seen)+len(add))
	for k := range seen {
		fresh[k] = struct{}{}
	}
	for _, v := range add {
		if _, dup := fresh[v]; dup {
			continue
		}
		fresh[v] = struct{}{}
		if pin {
			pinned = append(pinned, v)
		} else {
			minted = append(minted, v)
		}
	}
	if over := len(minted) - maxMinted; over > 0 {
		for _, v := range minted[:over] {
			delete(fresh, v)
		}
		minted = slices.Clone(minted[over:])
	}
	set := &knownSet{lengths: map[uint16][]int{}, sums: map[uint64]struct{}{}, pinned: len(pinned), seen: fresh}
	set.values = append(pinned, minted...)
	for _, v := range set.values {
		set.pairs[v.pair/64] |= 1 << (v.pair % 64)
		if !slices.Contains(set.lengths[v.pair], v.length) {
			set.lengths[v.pair] = append(set.lengths[v.pair], v.length)
		}
		set.sums[v.sum] = struct{}{}
	}
	for _, ls := range set.lengths {
		slices.SortFunc(ls, func(a, b int) int { return b - a })
	}
	known.set.Store(set)
}

// knownSpans returns the spans of registered values in text.
func knownSpans(text string, out []span) []span {
	set := known.set.Load()
	if set == nil {
		return out
	}
	for i := 0; i+MinKnown <= len(text); i++ {
		k := uint16(text[i])<<8 | uint16(text[i+1])
		if set.pairs[k/64]&(1<<(k%64)) == 0 {
			continue
		}
		for _, n := range set.lengths[k] {
			if i+n > len(text) {
				continue
			}
			if _, ok := set.sums[maphash.String(known.seed, text[i:i+n])]; ok {
				out = append(out, span{i, i + n})
				i += n - 1
				break
			}
		}
	}
	return out
}

// resetKnown forgets every registered value (tests).
func resetKnown() {
	known.mu.Lock()
	defer known.mu.Unlock()
	known.set.Store(nil)
}
