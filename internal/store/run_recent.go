package store

// RunRecentParams selects a page of one group's runs in one project:
// those with an ID below Before (every one when Before is ""), newest
// first, at most Limit (≤ 0: 100). The next page is Before = the last ID
// returned.
type RunRecentParams struct {
	GroupID   string
	ProjectID string
	Before    string
	Limit     int
}
