package sqlstore

// sessionWords adds the word filter of SessionList (store.SessionListParams
// Words) to a filter of the sessions table: a session matches when its
// title's search text holds every word, when one of its instructions'
// does (a LIKE per word on the padded search text, as the listing matches
// instructions: a session has few), or when one of its messages' does,
// through the text index (Dialect.TextMatch: the messages that match, by
// the index, then their sessions). Every search text is of the redacted
// text, so no search finds a secret.
func (t *Tx) sessionWords(where string, args []any, words []string) (string, []any) {
	if len(words) == 0 {
		return where, args
	}
	title, ins := "", ""
	var titleArgs, insArgs []any
	for i, w := range words {
		if i > 0 {
			title += " AND "
		}
		title += "sessions.search_text LIKE ?"
		ins += " AND i.search_text LIKE ?"
		titleArgs = append(titleArgs, "% "+w+" %")
		insArgs = append(insArgs, "% "+w+" %")
	}
	where += " AND ((" + title + ")" +
		" OR EXISTS (SELECT 1 FROM session_instructions i WHERE i.session_id = sessions.id" + ins + ")" +
		" OR sessions.id IN (SELECT m.session_id FROM messages m WHERE " + t.d.TextMatch() + "))"
	args = append(append(append(args, titleArgs...), insArgs...), t.d.MatchQuery(words))
	return where, args
}
