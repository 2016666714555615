package sqlstore

import (
	"context"
	"fmt"

	"github.com/continuo-dev/continuo"
)

// ledgerCols are the columns of context_ledger, in declaration order.
const ledgerCols = "worker_id, epoch, source, ref, tokens, basis, at"

// ledgerReported keeps the entries of reported sources; ledgerCounted
// those of counted ones.
const (
	ledgerReported = "source IN ('" + string(continuo.LedgerHostExact) + "', '" + string(continuo.LedgerEstimate) + "')"
	ledgerCounted  = "source NOT IN ('" + string(continuo.LedgerHostExact) + "', '" + string(continuo.LedgerEstimate) + "')"
)

func scanLedger(s scanner) (*continuo.LedgerEntry, error) {
	var e continuo.LedgerEntry
	var source string
	var at int64
	if err := s.Scan(&e.WorkerID, &e.Epoch, &source, &e.Ref, &e.Tokens, &e.Basis, &at); err != nil {
		return nil, err
	}
	e.Source, e.At = continuo.LedgerSource(source), fromMS(at)
	return &e, nil
}

// LedgerAdd implements store.ContinuationTx: an insert that does nothing
// on the primary key, which tells the engine's count of changed rows.
// Reported sources go through LedgerReport, which keeps their largest.
func (t *Tx) LedgerAdd(ctx context.Context, e continuo.LedgerEntry) (bool, error) {
	if e.Source.Reported() {
		return false, fmt.Errorf("store: LedgerAdd of a reported source (%s): use LedgerReport", e.Source)
	}
	res, err := t.exec(ctx, "INSERT INTO context_ledger ("+ledgerCols+") VALUES ("+Placeholders(7)+
		") ON CONFLICT (worker_id, epoch, source, ref) DO NOTHING",
		e.WorkerID, e.Epoch, string(e.Source), e.Ref, e.Tokens, e.Basis, ms(e.At))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// LedgerReport implements store.ContinuationTx: an upsert whose update
// applies only to a larger figure, so that a smaller later report (or a
// replay) changes nothing.
func (t *Tx) LedgerReport(ctx context.Context, e continuo.LedgerEntry) error {
	if !e.Source.Reported() {
		return fmt.Errorf("store: LedgerReport of a counted source (%s): use LedgerAdd", e.Source)
	}
	_, err := t.exec(ctx, "INSERT INTO context_ledger ("+ledgerCols+") VALUES ("+Placeholders(7)+`)
		ON CONFLICT (worker_id, epoch, source, ref) DO UPDATE SET tokens = excluded.tokens, basis = excluded.basis, at = excluded.at
		WHERE excluded.tokens > context_ledger.tokens`,
		e.WorkerID, e.Epoch, string(e.Source), e.Ref, e.Tokens, e.Basis, ms(e.At))
	return err
}

// LedgerEntries implements store.ContinuationTx: two ranges of the
// primary key, the counted sources summed (SUM of a bigint is numeric on
// PostgreSQL, hence the cast).
func (t *Tx) LedgerEntries(ctx context.Context, workerID string, epoch int64) ([]continuo.LedgerEntry, error) {
	return list(t, ctx, scanLedger, `SELECT worker_id, epoch, source, '', CAST(SUM(tokens) AS BIGINT), '', MAX(at)
			FROM context_ledger WHERE worker_id = ? AND epoch = ? AND `+ledgerCounted+` GROUP BY worker_id, epoch, source
		UNION ALL
		SELECT `+ledgerCols+` FROM context_ledger WHERE worker_id = ? AND epoch = ? AND `+ledgerReported+`
		ORDER BY 3, 4`, workerID, epoch, workerID, epoch)
}

// LedgerPrune implements store.ContinuationTx: a range of the primary key.
func (t *Tx) LedgerPrune(ctx context.Context, workerID string, beforeEpoch int64) error {
	_, err := t.exec(ctx, "DELETE FROM context_ledger WHERE worker_id = ? AND epoch < ?", workerID, beforeEpoch)
	return err
}
