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
// of this process), so that the registry itself tells nothing of the
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

var known struct {
	seed maphash.Seed
	mu   sync.RWMutex
	n    atomic.Int64 // values registered, read without the lock
	// pairs has a bit for the first two bytes of every value; lengths
	// counts the values of each (first two bytes, length), which scanning
	// looks up at each candidate; sums holds every value's hash.
	pairs   [1 << 16 / 64]uint64
	lengths map[uint16]map[int]int
	sums    map[uint64]knownValue
	minted  []knownValue // oldest first, at most maxMinted
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

func register(pinned bool, values []string) {
	known.mu.Lock()
	defer known.mu.Unlock()
	if known.sums == nil {
		known.sums = map[uint64]knownValue{}
		known.lengths = map[uint16]map[int]int{}
	}
	for _, v := range values {
		if len(v) < MinKnown || !utf8.ValidString(v) || strings.Contains(v, Placeholder) {
			continue
		}
		kv := knownValue{pair: uint16(v[0])<<8 | uint16(v[1]), length: len(v), sum: maphash.String(known.seed, v)}
		if _, dup := known.sums[kv.sum]; dup {
			continue
		}
		known.sums[kv.sum] = kv
		if known.lengths[kv.pair] == nil {
			known.lengths[kv.pair] = map[int]int{}
		}
		known.lengths[kv.pair][kv.length]++
		known.pairs[kv.pair/64] |= 1 << (kv.pair % 64)
		if pinned {
			continue
		}
		known.minted = append(known.minted, kv)
		if len(known.minted) > maxMinted {
			forget(known.minted[0])
			known.minted = known.minted[1:]
		}
	}
	known.n.Store(int64(len(known.sums)))
}

// forget removes a value (known.mu held).
func forget(kv knownValue) {
	delete(known.sums, kv.sum)
	ls := known.lengths[kv.pair]
	if ls[kv.length]--; ls[kv.length] == 0 {
		delete(ls, kv.length)
	}
	if len(ls) == 0 {
		delete(known.lengths, kv.pair)
		known.pairs[kv.pair/64] &^= 1 << (kv.pair % 64)
	}
}

// knownSpans returns the spans of registered values in text: at each
// position whose two bytes begin a value, the hash of the text of each
// length a value of those bytes has (the longest first).
func knownSpans(text string, out []span) []span {
	if known.n.Load() == 0 {
		return out
	}
	known.mu.RLock()
	defer known.mu.RUnlock()
	var lens []int
	for i := 0; i+MinKnown <= len(text); i++ {
		k := uint16(text[i])<<8 | uint16(text[i+1])
		if known.pairs[k/64]&(1<<(k%64)) == 0 {
			continue
		}
		lens = lens[:0]
		for n := range known.lengths[k] {
			lens = append(lens, n)
		}
		slices.Sort(lens)
		for j := len(lens) - 1; j >= 0; j-- {
			n := lens[j]
			if i+n > len(text) {
				continue
			}
			if kv, ok := known.sums[maphash.String(known.seed, text[i:i+n])]; ok && kv.pair == k && kv.length == n {
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
	known.sums, known.lengths, known.minted = nil, nil, nil
	known.pairs = [len(known.pairs)]uint64{}
	known.n.Store(0)
}
