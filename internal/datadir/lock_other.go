//go:build !unix

package datadir

import "os"

// tryLock always succeeds where the system has no flock: there, running two
// servers on one data directory is not prevented (docs/OPERATIONS.md).
func tryLock(*os.File) (bool, error) { return true, nil }
