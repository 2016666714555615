package workflow

import "github.com/continuo-dev/continuo"

// briefSource is the source a validation run ran on, by 12-character
// prefixes: its head, the hash that identifies the tested tree (head and
// uncommitted changes; workspace.Source.TreeHash), and whether it had no
// uncommitted changes.
func briefSource(r *continuo.Run) *BriefSource {
	src := RunSource(r)
	if src == nil {
		return &BriefSource{Head: prefix(r.SourceHead, 12)}
	}
	return &BriefSource{Head: prefix(src.Head, 12), TreeHash: prefix(src.TreeHash(), 12), Clean: src.Clean}
}
