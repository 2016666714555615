package workflow

import (
	"github.com/continuo-dev/continuo"
)

// Open is the open work of the session, each list high priority first,
// then newest.
type Open struct {
	Todos     Notes     `json:"todos"`
	Risks     Notes     `json:"risks"`
	Questions Questions `json:"questions"`
}

// Questions are the open questions: only the user can settle them.
type Questions struct {
	Note string `json:"note,omitempty"`
	Notes
}

// QuestionsNote is what the brief says about open questions.
const QuestionsNote = "only the user can settle these: ask the user; do not answer them yourself"

// Answered is the newest answered questions as question/answer pairs:
// those whose answer still holds first.
type Answered struct {
	Items     []Answer `json:"items"`
	Total     int64    `json:"total"`
	Returned  int      `json:"returned"`
	Truncated bool     `json:"truncated"`
}

// Answer is one resolved question with its answer: the answer message
// (answer.message_id) or the resolution given when it was resolved.
type Answer struct {
	Question Item       `json:"question"`
	Answer   AnswerText `json:"answer"`
}

// AnswerText is the answer half of a pair.
type AnswerText struct {
	MessageID string `json:"message_id,omitempty"`
	Excerpt   string `json:"excerpt"`
	Truncated bool   `json:"truncated,omitempty"`
	At        string `json:"at,omitempty"`
	// ReplacedBy names the message (not an answer) that superseded this
	// answer: it no longer holds.
	ReplacedBy string `json:"replaced_by,omitempty"`
}

// QA is a resolved question and what answered it.
type QA struct {
	Question continuo.Message
	// Answer is the answer in force: the answer message that resolved the
	// question or, when that one was superseded by a later answer, the
	// latest of them. Nil when the question was resolved with
	// resolve_session_message (its resolution is the answer).
	Answer *continuo.Message
	// Replaced names what superseded the answer when that is not another
	// answer (a decision, say): the pair no longer holds.
	Replaced string
}

// InForce reports whether the pair's answer still holds.
func (q *QA) InForce() bool { return q.Replaced == "" }

// text is the answer's text: the answer message's, or the resolution.
func (q *QA) text() string {
	if q.Answer != nil {
		return q.Answer.Text
	}
	return q.Question.Resolution
}

func scrubAnswered(qs []QA) []QA {
	out := make([]QA, len(qs))
	for i, q := range qs {
		q.Question = scrubMessages([]continuo.Message{q.Question})[0]
		if q.Answer != nil {
			q.Answer = &scrubMessages([]continuo.Message{*q.Answer})[0]
		}
		out[i] = q
	}
	return out
}

// answers makes the answered pairs: those whose answer still holds first,
// newest first, then the others (their answer names what replaced it).
func answers(qs []QA) []Answer {
	out := make([]Answer, 0, len(qs))
	for _, inForce := range []bool{true, false} {
		for i := range qs {
			q := &qs[i]
			if q.InForce() != inForce {
				continue
			}
			it := item(&q.Question, answeredBytes)
			it.Supersedes = ""
			a := excerpt(q.text(), false, answeredBytes)
			at := AnswerText{Excerpt: a.Excerpt, Truncated: a.Truncated, ReplacedBy: q.Replaced}
			if q.Answer != nil {
				at.MessageID, at.At = q.Answer.ID, ts(q.Answer)
			} else if r := q.Question.ResolvedAt; r != nil {
				at.At = r.UTC().Format(continuo.TimeFormat)
			}
			if q.Answer == nil && q.Question.ResolvedBy != "" {
				at.MessageID = q.Question.ResolvedBy
			}
			out = append(out, Answer{Question: it, Answer: at})
		}
	}
	return out
}
