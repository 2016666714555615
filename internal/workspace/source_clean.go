package workspace

import (
	"crypto/sha256"
	"encoding/hex"
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
