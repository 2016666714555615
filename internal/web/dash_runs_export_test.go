package web

import "time"

// SetRunStreamMax bounds the run event streams to d until the returned
// function restores the bound.
func SetRunStreamMax(d time.Duration) (restore func()) {
	old := runStreamMax.Swap(int64(d))
	return func() { runStreamMax.Store(old) }
}
