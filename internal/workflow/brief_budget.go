package workflow

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/continuo-dev/continuo/internal/workspace"
)

// MaxBriefBytes bounds the serialized handoff brief (CONTRACT.md §4).
const MaxBriefBytes = 8192

// shape is how much of each cuttable section a brief shows. BuildBrief
// starts from the most (fullShape) and cuts in the order of CONTRACT.md §4
// (cutOrder) until the brief fits MaxBriefBytes, so the same snapshot is
// always cut the same way.
type shape struct {
	progress    int // recent_progress items
	decisions   int // decisions, from the front of their order
	open        int // open todos and risks, each
	answered    int // answered pairs
	constraints int // constraints, whole, from the front
	rest        int // index into lastResort: how much of what the contract never cuts stays
}

// rest is the size of the sections the contract does not name in its cut
// order: the instructions, the title, the goal, the open questions, the
// first few todos and risks, the workspace's lists and, last of all, the
// current state. A brief reaches the smaller settings only when texts that
// JSON escapes to six bytes a character (control characters, <, >, &)
// fill it: the budget is absolute.
type rest struct {
	instr, title, state int // bytes
	goals, goalTitle    int // goals shown, bytes of each title (and its current step's)
	questions, open     int // open questions; todos and risks each (below the cut order's floor)
	files, subjects     int
}

// lastResort runs from the smallest setting to the full one (the last).
var lastResort = []rest{
	{instr: 60, title: 60, state: 0},
	{instr: 80, title: 60, state: 256},
	{instr: 120, title: 80, state: 512, goals: 1, goalTitle: 60, questions: 1},
	{instr: 200, title: 120, state: 1024, goals: 1, goalTitle: 80, questions: 1, open: 1, files: 3, subjects: 1},
	{instr: 300, title: 160, state: 2048, goals: 2, goalTitle: 100, questions: 2, open: 2, files: 10, subjects: 2},
	{instr: 600, title: 240, state: 2048, goals: 3, goalTitle: 120, questions: BriefOpen, open: BriefOpen, files: workspace.MaxChanges, subjects: workspace.MaxSubjects},
}

// cutOrder is CONTRACT.md §4's order of cutting, first cut first: older
// progress, then decisions from the end of their order, then open todos
// and risks beyond the first few, then answered pairs, then constraints;
// the current state only in lastResort's smallest settings.
var cutOrder = []struct {
	knob  func(*shape) *int
	floor int
}{
	{func(s *shape) *int { return &s.progress }, 0},
	{func(s *shape) *int { return &s.decisions }, 0},
	{func(s *shape) *int { return &s.open }, openFew},
	{func(s *shape) *int { return &s.answered }, 0},
	{func(s *shape) *int { return &s.constraints }, 0},
	{func(s *shape) *int { return &s.rest }, 0},
}

// How many messages the snapshot should carry per section, and how many
// bytes each item's excerpt keeps.
const (
	BriefDecisions   = 24 // of each read: by priority, corrections
	BriefCited       = 16 // decisions cited by id, read by id in one query
	BriefProgress    = 5
	BriefOpen        = 8 // todos, risks, questions: each
	BriefAnswered    = 8
	BriefConstraints = 16
	BriefGoals       = 8
	openFew          = 3 // todos and risks kept after the others are cut
	constraintBytes  = 2048
	decisionBytes    = 320
	progressBytes    = 200
	openBytes        = 240
	answeredBytes    = 240
	maxChecks        = 8
	maxActions       = 7
	maxCheckActions  = 3 // checks named by next_actions, in one action
	pathBytes        = 256
	subjectBytes     = 120
)

// BuildBrief builds the handoff brief from a snapshot. It is a pure
// function: no I/O, no clock, no randomness; the same snapshot gives the
// same bytes. The result is valid JSON of at most MaxBriefBytes.
func BuildBrief(s *Snapshot) (*Brief, []byte) {
	sc := scrub(s)
	sh := fullShape(sc)
	b, out := render(sc, sh)
	for _, step := range cutOrder {
		if len(out) <= MaxBriefBytes {
			return b, out
		}
		k := step.knob(&sh)
		hi := *k
		if hi <= step.floor {
			continue
		}
		*k = step.floor
		if b, out = render(sc, sh); len(out) > MaxBriefBytes {
			continue // all of this section is not enough: cut the next
		}
		// The most of this section that fits: a brief shrinks as a count
		// does, so the first count from the top that fits is found by
		// bisection (hi does not fit, the floor does).
		i := sort.Search(hi-step.floor, func(i int) bool {
			*k = hi - 1 - i
			_, o := render(sc, sh)
			return len(o) <= MaxBriefBytes
		})
		*k = hi - 1 - i
		b, out = render(sc, sh)
	}
	if len(out) <= MaxBriefBytes {
		return b, out
	}
	// Unreachable with the bounds above (the smallest setting is far below
	// the budget), but the contract is absolute, so say so rather than
	// exceed it.
	panic(fmt.Sprintf("handoff brief of %d bytes exceeds %d at the smallest setting", len(out), MaxBriefBytes))
}

// fullShape is the most of each section a brief shows.
func fullShape(s *scrubbed) shape {
	return shape{progress: BriefProgress, decisions: len(s.ordered), open: BriefOpen, answered: len(s.Answered),
		constraints: len(s.Guidance), rest: len(lastResort) - 1}
}

func render(s *scrubbed, sh shape) (*Brief, []byte) {
	b := build(s, sh)
	out, _ := json.Marshal(b) // cannot fail: plain structs of strings and numbers
	return b, out
}
