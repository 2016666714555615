package workspace

import "context"

// Probe is ProbeUpTo with the default bound, for this package's tests.
func Probe(ctx context.Context, root string) (State, error) {
	return ProbeUpTo(ctx, root, MaxChanges)
}

// Since is SinceUpTo with the default bound, for this package's tests.
func Since(ctx context.Context, dir, base string) (Commits, error) {
	return SinceUpTo(ctx, dir, base, MaxSubjects)
}
