package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// cleanTree is the Tree of a checkout whose working tree is exactly its
// Head: the hash of no path at all.
var cleanTree = func() string {
	h := sha256.Sum256([]byte(sourceVersion))
	return hex.EncodeToString(h[:])
}()

// Clean reports whether the source is its Head as committed: git listed
// no changed or untracked path (so Tree hashes none). What SourceOf does
// not look at (ignored files) does not count, as in Tree.
func (s Source) Clean() bool { return s.Tree == cleanTree }

// TreeHash is what identifies the working tree a source describes, for
// people and models: the SHA-256 of its Head and of its differences from
// Head (Tree). Two sources share it exactly when they share both, so two
// clean checkouts of different commits never do. (Tree alone is the same
// for every clean checkout.)
func (s Source) TreeHash() string {
	h := sha256.New()
	fmt.Fprintf(h, "continuo tree 1\x00%d:%s%d:%s", len(s.Head), s.Head, len(s.Tree), s.Tree)
	return hex.EncodeToString(h.Sum(nil))
}
