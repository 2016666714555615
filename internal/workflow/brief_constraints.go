package workflow

import (
	"github.com/continuo-dev/continuo"
)

// Constraints are the open guidance messages, the user's standing
// instructions, verbatim: high priority first, then newest.
type Constraints struct {
	Items     []Constraint `json:"items"`
	Total     int64        `json:"total"`
	Returned  int          `json:"returned"`
	Truncated bool         `json:"truncated"`
}

// Constraint is one guidance message, in full unless Truncated (only ever
// the first, when it alone exceeds the budget).
type Constraint struct {
	MessageID string `json:"message_id"`
	Text      string `json:"text"`
	Truncated bool   `json:"truncated,omitempty"`
	At        string `json:"at"`
	Priority  string `json:"priority,omitempty"`
}

// constraints carries the first n guidance messages verbatim, in order,
// while they fit budget bytes together; only a first message longer than
// the whole budget is cut.
func constraints(msgs []continuo.Message, total int64, n, budget int) Constraints {
	out := Constraints{Items: []Constraint{}, Total: total}
	used := 0
	for i := range msgs[:min(n, len(msgs))] {
		m := &msgs[i]
		text, truncated := m.Text, false
		if used+len(text) > budget {
			if i > 0 {
				break
			}
			text = clip(text, budget)
			truncated = true
		}
		used += len(text)
		out.Items = append(out.Items, Constraint{MessageID: m.ID, Text: text, Truncated: truncated, At: ts(m), Priority: priority(m.Priority)})
	}
	out.Returned = len(out.Items)
	out.Truncated = int64(out.Returned) < total || (out.Returned > 0 && out.Items[out.Returned-1].Truncated)
	return out
}
