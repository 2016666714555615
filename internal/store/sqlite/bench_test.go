package sqlite_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/continuo-dev/continuo/internal/store/sqlite"
	"github.com/continuo-dev/continuo/internal/store/storetest"
)

// BenchmarkEntrySearch: a word query on a 100- and a 100,000-message
// session (storetest.BenchEntrySearch).
func BenchmarkEntrySearch(b *testing.B) {
	for _, n := range []int{100, 100_000} {
		for _, w := range [][]string{{"topic7"}, {"topic7", "common"}, {"common"}} {
			b.Run(strconv.Itoa(n)+"/"+w[len(w)-1]+strconv.Itoa(len(w)), func(b *testing.B) {
				db, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "b.db"), nil)
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				storetest.BenchEntrySearch(b, db, n, w...)
			})
		}
	}
}
