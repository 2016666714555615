package workspace

import (
	"bytes"
	"fmt"
	"strings"
)

// porcelain reads `git status --porcelain=v2 --branch -z` one record at a
// time, for ProbeUpTo's statusParser and SourceOf's sourceParser: it keeps
// the branch headers, which come before the entries, and splits each entry
// into its kind, status and path. What to make of an entry, a malformed or
// a too long record is its reader's.
type porcelain struct {
	records
	entries  bool // an entry was seen: no more headers
	origNext bool // the next record is the original path of a rename
	head     string
	branch   string
	sawOID   bool
	sawHead  bool
}

// statusRecord is one record as porcelain reads it.
type statusRecord struct {
	rec    []byte // the record, cut at its reader's bound
	long   bool   // rec was cut
	header bool   // a "# ..." header (porcelain keeps branch.oid and branch.head when not long)
	orig   bool   // a rename's original path: with -z, its own record; rec is the path
	kind   byte   // an entry's first byte: '1', '2', 'u', '?' (changes), '!' (ignored) or another
	status string // a change's XY, "??" for untracked
	path   string // a change's path when ok
	ok     bool   // a change's fields were all there
}

// change reports whether r is an entry of a changed, renamed, unmerged or
// untracked path.
func (r statusRecord) change() bool {
	return r.kind == '1' || r.kind == '2' || r.kind == 'u' || r.kind == '?'
}

// next reads one complete NUL-terminated record; false for an empty one.
func (p *porcelain) next(rec []byte, long bool) (statusRecord, bool) {
	r := statusRecord{rec: rec, long: long}
	if p.origNext {
		p.origNext = false
		r.orig = true
		return r, true
	}
	if !p.entries && bytes.HasPrefix(rec, []byte("#")) {
		r.header = true
		if long {
			return r, true
		}
		if oid, ok := bytes.CutPrefix(rec, []byte("# branch.oid ")); ok {
			p.sawOID, p.head = true, string(oid)
		} else if head, ok := bytes.CutPrefix(rec, []byte("# branch.head ")); ok {
			p.sawHead, p.branch = true, string(head)
		}
		return r, true
	}
	if len(rec) == 0 {
		return r, false
	}
	p.entries = true
	r.kind = rec[0]
	var fields int // space-separated fields before the path
	switch r.kind {
	case '1':
		fields = 8
	case '2': // "-z": the original path follows as its own record
		fields = 9
		p.origNext = true
	case 'u':
		fields = 10
	case '?':
		fields = 1
	default:
		return r, true
	}
	r.status = "??"
	if r.kind != '?' && len(rec) >= 4 {
		r.status = string(rec[2:4])
	}
	rest := string(rec)
	for range fields {
		_, after, ok := strings.Cut(rest, " ")
		if !ok {
			return r, true
		}
		rest = after
	}
	r.path, r.ok = rest, true
	return r, true
}

// commit is the branch.oid header's commit: "" before the first commit;
// an error (naming op) for what is not an object id.
func (p *porcelain) commit(op string) (string, error) {
	if p.head == "(initial)" {
		return "", nil
	}
	if !isObjectID(p.head) {
		return "", fmt.Errorf("workspace: %s: unexpected commit id %q", op, p.head)
	}
	return p.head, nil
}

// records splits a stream of NUL-terminated records that arrives in
// arbitrary pieces (git's -z output, as an io.Writer receives it). It keeps
// at most max bytes of a record and says whether the record was longer, so a
// record, however long, costs at most max bytes of memory.
type records struct {
	rec  []byte // the record being read, at most max bytes of it
	long bool   // the record being read is longer than max
}

// write consumes b, calling end for every record that b completes. The
// slice end receives is reused once end returns.
func (r *records) write(b []byte, max int, end func(rec []byte, long bool)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if room := max - len(r.rec); len(chunk) > room {
			r.rec = append(r.rec, chunk[:room]...)
			r.long = true
		} else {
			r.rec = append(r.rec, chunk...)
		}
		if i < 0 {
			break
		}
		r.finish(end)
		b = b[i+1:]
	}
}

// flush hands end the last record if the stream did not end with a NUL.
func (r *records) flush(end func(rec []byte, long bool)) {
	if len(r.rec) > 0 || r.long {
		r.finish(end)
	}
}

func (r *records) finish(end func(rec []byte, long bool)) {
	rec, long := r.rec, r.long
	r.rec, r.long = r.rec[:0], false
	end(rec, long)
}
