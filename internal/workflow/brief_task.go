package workflow

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/continuo-dev/continuo"
)

// Task is what the session is about, where it stands, and what was decided
// and done.
type Task struct {
	RootInstruction Text `json:"root_instruction"`
	// LatestInstruction is omitted while it is the root.
	LatestInstruction *Text         `json:"latest_instruction,omitempty"`
	Instructions      int64         `json:"instructions"`
	CurrentState      *CurrentState `json:"current_state,omitempty"` // absent: no progress yet
	Decisions         Decisions     `json:"decisions"`
	RecentProgress    Notes         `json:"recent_progress"`
}

// CurrentState is the newest progress message tagged handoff (or, when
// there is none, the newest progress message), in full up to its budget.
type CurrentState struct {
	MessageID string `json:"message_id"`
	Text      string `json:"text"`
	Truncated bool   `json:"truncated,omitempty"`
	Handoff   bool   `json:"handoff"` // tagged handoff, not merely the newest progress
	At        string `json:"at"`
}

// Notes is a selection of messages with its coverage.
type Notes struct {
	Items     []Item `json:"items"`
	Total     int64  `json:"total"`
	Returned  int    `json:"returned"`
	Truncated bool   `json:"truncated"`
}

// Item is one message in the brief. Every item of a section has the same
// status (in force, open), so none is shown.
type Item struct {
	MessageID  string `json:"message_id"`
	Excerpt    string `json:"excerpt"`
	Truncated  bool   `json:"truncated,omitempty"`
	At         string `json:"at"`
	Priority   string `json:"priority,omitempty"` // only when not normal
	Supersedes string `json:"supersedes,omitempty"`
}

func items(msgs []continuo.Message, bytes int) []Item {
	out := make([]Item, len(msgs))
	for i := range msgs {
		out[i] = item(&msgs[i], bytes)
	}
	return out
}

// excerpt cuts an already redacted text to n bytes at a word boundary
// (clip).
func excerpt(text string, redacted bool, n int) Text {
	out := clip(text, n)
	return Text{Excerpt: out, Truncated: out != text, Redacted: redacted}
}

func item(m *continuo.Message, bytes int) Item {
	t := excerpt(m.Text, false, bytes)
	return Item{MessageID: m.ID, Excerpt: t.Excerpt, Truncated: t.Truncated, At: ts(m), Priority: priority(m.Priority), Supersedes: m.Supersedes}
}

// notes shows the first n of items (in the snapshot's order).
func notes(items []Item, total int64, n int) Notes {
	n = min(n, len(items))
	out := Notes{Items: items[:n:n], Total: total, Returned: n, Truncated: int64(n) < total}
	if out.Items == nil {
		out.Items = []Item{} // [] rather than null
	}
	return out
}

// ellipsis ends an excerpt that was cut.
const ellipsis = "…"

// clip cuts text to at most n bytes at a word boundary and ends it with
// "…": never in the middle of a word or of a character. Text that fits is
// returned as it is. A text with no space in the part that fits (one long
// token, a URL) is cut at a character boundary rather than shown empty.
func clip(text string, n int) string {
	if len(text) <= n {
		return text
	}
	if n < len(ellipsis)+1 {
		return ""
	}
	keep := cut(text, n-len(ellipsis))
	if next, _ := utf8.DecodeRuneInString(text[len(keep):]); !unicode.IsSpace(next) {
		// The cut falls inside a word: end before it.
		if i := strings.LastIndexFunc(keep, unicode.IsSpace); i > 0 {
			keep = keep[:i]
		}
	}
	return strings.TrimRightFunc(keep, unicode.IsSpace) + ellipsis
}
