package redact

// regexpWork returns the bytes the rules' expressions were given while
// String redacted s, over all its passes: the windows of anchored tries,
// what unbounded tries read, and the texts of FindAll (scan.work). It is
// deterministic, unlike a time. Tests that call it must not run in
// parallel with other calls of String.
func regexpWork(s string) int {
	n := 0
	workHook = func(b int) { n += b }
	defer func() { workHook = nil }()
	String(s)
	return n
}
