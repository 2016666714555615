package web

import (
	"net/http"
	"time"
)

// SetRunStreamMax bounds the run event streams to d until the returned
// function restores the bound.
func SetRunStreamMax(d time.Duration) (restore func()) {
	old := runStreamMax.Swap(int64(d))
	return func() { runStreamMax.Store(old) }
}

// DashRoutes lists the pattern of every route the dashboard registers.
func DashRoutes() []string {
	var out []string
	(&dash{}).register(func(pattern string, _ http.HandlerFunc) { out = append(out, pattern) })
	return out
}

// Routes lists the pattern of every route of the handler o makes.
func Routes(o Options) []string {
	_, patterns := handler(o)
	return patterns
}
