package sqlite_test

import (
	"testing"

	"github.com/continuo-dev/continuo/internal/store/storetest"
)

// Migration 0011 adds the search text of session titles: a version 10
// database is refused until `migrate up`, then its sessions are found by
// the words of their titles (the driver's backfill indexes them), never by
// a secret in one.
func TestMigration0011FromV10(t *testing.T) {
	storetest.CheckMigration0011(t, upgradedFrom(t, 10, storetest.Migration0011Seed))
}
