package workflow

import (
	"regexp"
	"slices"

	"github.com/continuo-dev/continuo"
)

// Decisions are the decisions in force in the order of CONTRACT.md §4
// (OrderDecisions): high priority, corrections, those cited by id, then
// the newest. Superseded decisions are only counted: the item that
// replaced one names it in supersedes.
type Decisions struct {
	Items      []Item `json:"items"`
	Total      int64  `json:"total"` // in force
	Returned   int    `json:"returned"`
	Truncated  bool   `json:"truncated"`
	Superseded int64  `json:"superseded"`
}

// OrderDecisions orders decisions in force as CONTRACT.md §4 does: high
// priority first; then corrections (decisions that supersede another);
// then those cited by id (cited, from Citations); then the rest, normal
// before low. Inside each of those, corrections come before citations and
// the newest first, so that a correction is never cut before another
// decision of its priority, and the same decisions always come in the same
// order. Repeated ids are kept once.
func OrderDecisions(ds []continuo.Message, cited []string) []continuo.Message {
	out := make([]continuo.Message, 0, len(ds))
	seen := make(map[string]bool, len(ds))
	for _, d := range ds {
		if !seen[d.ID] {
			seen[d.ID] = true
			out = append(out, d)
		}
	}
	isCited := make(map[string]bool, len(cited))
	for _, id := range cited {
		isCited[id] = true
	}
	key := func(m *continuo.Message) []int {
		return []int{b2i(m.Priority == continuo.PriorityHigh), b2i(m.Supersedes != ""), b2i(isCited[m.ID]), m.Priority.Rank()}
	}
	slices.SortFunc(out, func(a, b continuo.Message) int {
		if c := slices.Compare(key(&b), key(&a)); c != 0 {
			return c
		}
		return cmpDesc(a.Seq, b.Seq, a.ID, b.ID)
	})
	return out
}

// cmpDesc orders newest first: by seq, then (for messages of unknown seq)
// by id, which sorts by time.
func cmpDesc(aSeq, bSeq int64, aID, bID string) int {
	switch {
	case aSeq != bSeq:
		if aSeq > bSeq {
			return -1
		}
		return 1
	case aID > bID:
		return -1
	case aID < bID:
		return 1
	}
	return 0
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// messageIDs finds msg_… ids in text (CONTRACT.md §1: prefix and 26
// characters of Crockford base32).
var messageIDs = regexp.MustCompile(`msg_[0-7][0-9A-HJKMNP-TV-Z]{25}`)

// Citations returns the message ids that the current state, the open todos
// and questions and the active goals' current steps name, in that order,
// each once, at most BriefCited: the decisions the remaining work depends
// on. The snapshot's reader fetches those that are not among the decisions
// it read; BuildBrief puts them before the other decisions of their
// priority.
func Citations(state *continuo.Message, open map[continuo.Kind][]continuo.Message, goals []continuo.Goal) []string {
	var texts []string
	if state != nil {
		texts = append(texts, state.Text)
	}
	for _, k := range []continuo.Kind{continuo.KindTodo, continuo.KindQuestion} {
		for _, m := range open[k] {
			texts = append(texts, m.Text)
		}
	}
	for _, g := range goals {
		for _, st := range g.Steps {
			if st.ID == g.CurrentStepID && g.CurrentStepID != "" {
				texts = append(texts, st.Title)
			}
		}
	}
	var out []string
	for _, t := range texts {
		for _, id := range messageIDs.FindAllString(t, -1) {
			if len(out) == BriefCited {
				return out
			}
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}
