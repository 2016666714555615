package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// BenchEntrySearch measures one page (51 entries, the service's limit+1)
// and its count, of a word query on a session of n messages, with a
// 100-message session beside it. Message i says "… topicK …" with K = i mod
// 100, so "topic7" matches 1% of a session; "common" matches every message.
func BenchEntrySearch(b *testing.B, s store.Store, n int, words ...string) {
	ctx := b.Context()
	f := Setup(b, s, "bench")
	small := Session(b, s, f.Group.ID, f.Project.ID, "small")
	for _, sess := range []struct {
		id string
		n  int
	}{{f.Session.ID, n}, {small.ID, 100}} {
		for start := 0; start < sess.n; start += 5000 {
			MustWrite(b, s, func(tx store.Tx) error {
				for i := start; i < min(start+5000, sess.n); i++ {
					m := NewMessage(sess.id, int64(i+1), continuo.KindNote,
						fmt.Sprintf("note %d: common words about topic%d, see file_%d.go", i, i%100, i))
					m.ID = continuo.NewID(continuo.PrefixMessage, Base.Add(time.Duration(i)*time.Millisecond))
					if err := tx.MessageCreate(ctx, m); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}
	p := store.EntryListParams{SessionID: f.Session.ID, Words: words, Limit: 51}
	b.ResetTimer()
	for b.Loop() {
		MustRead(b, s, func(tx store.Tx) error {
			if _, err := tx.EntryList(ctx, p); err != nil {
				return err
			}
			_, err := tx.EntryCount(ctx, p)
			return err
		})
	}
}
