package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/store"
)

// runListDefault is RunList's and RunEvents' limit when none is given.
const runListDefault = 100

// runCols are the columns of runs, in declaration order. They are not
// qualified: EvidenceLatest's evidence columns carry other names.
const runCols = `id, kind, state, group_id, project_id, session_id, check_name, provider_id, dir, spec,
	request_hash, source_head, source_tree, owner, lease_until, proc, cancel_requested, exit_code, error_kind, usage,
	event_seq, output_bytes, kept_bytes, head_seq, dropped_through, revision, created_at, started_at, ended_at, source_stat`

// notEnded keeps the runs whose state is not terminal.
const notEnded = "state IN ('" + string(continuo.RunQueued) + "', '" + string(continuo.RunRunning) + "')"

// leaseMS stores no lease (the zero time) as 0.
func leaseMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return ms(t)
}

func fromLeaseMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return fromMS(v)
}

// runScan is one run as its columns scan, before conversion; it lets
// EvidenceLatest scan a run after the evidence columns of the same row.
type runScan struct {
	r                      continuo.Run
	kind, state            string
	lease, cancel, created int64
	exit, started, ended   sql.NullInt64
}

func (x *runScan) dest() []any {
	r := &x.r
	return []any{&r.ID, &x.kind, &x.state, &r.GroupID, &r.ProjectID, &r.SessionID, &r.Check, &r.ProviderID, &r.Dir, &r.Spec,
		&r.RequestHash, &r.SourceHead, &r.SourceTree, &r.Owner, &x.lease, &r.Proc, &x.cancel, &x.exit, &r.ErrorKind, &r.Usage,
		&r.EventSeq, &r.OutputBytes, &r.KeptBytes, &r.HeadSeq, &r.DroppedThrough, &r.Revision, &x.created, &x.started, &x.ended, &r.SourceStat}
}

func (x *runScan) run() continuo.Run {
	r := x.r
	r.Kind, r.State = continuo.RunKind(x.kind), continuo.RunState(x.state)
	r.LeaseUntil, r.CancelRequested = fromLeaseMS(x.lease), x.cancel != 0
	if x.exit.Valid {
		code := int(x.exit.Int64)
		r.ExitCode = &code
	}
	r.CreatedAt, r.StartedAt, r.EndedAt = fromMS(x.created), fromNullMS(x.started), fromNullMS(x.ended)
	return r
}

func scanRun(s scanner) (*continuo.Run, error) {
	var x runScan
	if err := s.Scan(x.dest()...); err != nil {
		return nil, err
	}
	r := x.run()
	return &r, nil
}

func exitCode(p *int) any {
	if p == nil {
		return nil
	}
	return int64(*p)
}

// RunCreate implements store.RunTx. A second running validation run of
// one check in one directory violates runs_running_check: ErrConflict.
func (t *Tx) RunCreate(ctx context.Context, r *continuo.Run) error {
	_, err := t.exec(ctx, "INSERT INTO runs ("+runCols+") VALUES ("+Placeholders(30)+")",
		r.ID, string(r.Kind), string(r.State), r.GroupID, r.ProjectID, r.SessionID, r.Check, r.ProviderID, r.Dir, r.Spec,
		r.RequestHash, r.SourceHead, r.SourceTree, r.Owner, leaseMS(r.LeaseUntil), r.Proc, boolInt(r.CancelRequested),
		exitCode(r.ExitCode), r.ErrorKind, r.Usage,
		r.EventSeq, r.OutputBytes, r.KeptBytes, r.HeadSeq, r.DroppedThrough, r.Revision, ms(r.CreatedAt), msPtr(r.StartedAt), msPtr(r.EndedAt),
		r.SourceStat)
	return err
}

// RunGet implements store.RunTx.
func (t *Tx) RunGet(ctx context.Context, id string) (*continuo.Run, error) {
	r, err := scanRun(t.row(ctx, "SELECT "+runCols+" FROM runs WHERE id = ?", id))
	return r, t.interpret(err)
}

// RunUpdate implements store.RunTx: the state stays as r has it.
func (t *Tx) RunUpdate(ctx context.Context, r *continuo.Run, prevRevision int64) error {
	return t.runWrite(ctx, r, prevRevision, r.State, keep("state", r.State))
}

// RunMove implements store.RunTx, as a guarded transition.
func (t *Tx) RunMove(ctx context.Context, r *continuo.Run, prevRevision int64, to continuo.RunState) error {
	if err := t.runWrite(ctx, r, prevRevision, to, move("state", r.State, to)); err != nil {
		return err
	}
	r.State = to
	return nil
}

// runWrite writes r's mutable fields with state to, under guard. A cancel
// request is never taken back: RunRequestCancel leaves the revision as it
// is, so an update computed from a read before it would otherwise undo it.
func (t *Tx) runWrite(ctx context.Context, r *continuo.Run, prevRevision int64, to continuo.RunState, guard stateGuard) error {
	if r.Revision <= prevRevision {
		return errors.New("store: a run update must raise the revision")
	}
	return t.guarded(ctx, "runs", "id", r.ID, []stateGuard{guard}, `UPDATE runs SET state = ?, owner = ?, lease_until = ?, proc = ?,
		cancel_requested = CASE WHEN cancel_requested = 1 THEN 1 ELSE ? END, exit_code = ?, error_kind = ?, usage = ?,
		revision = ?, started_at = ?, ended_at = ? WHERE id = ? AND revision = ?`,
		string(to), r.Owner, leaseMS(r.LeaseUntil), r.Proc, boolInt(r.CancelRequested), exitCode(r.ExitCode), r.ErrorKind, r.Usage,
		r.Revision, msPtr(r.StartedAt), msPtr(r.EndedAt), r.ID, prevRevision)
}

// RunRequestCancel implements store.RunTx.
func (t *Tx) RunRequestCancel(ctx context.Context, id string) (bool, error) {
	res, err := t.exec(ctx, "UPDATE runs SET cancel_requested = 1 WHERE id = ? AND "+notEnded, id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// RunRenew implements store.RunTx. Nobody owns a run with no owner, so
// renewing the lease of owner "" is an error rather than every untaken
// run's.
func (t *Tx) RunRenew(ctx context.Context, owner string, until time.Time) (int64, error) {
	if owner == "" {
		return 0, errors.New("store: RunRenew needs an owner")
	}
	res, err := t.exec(ctx, "UPDATE runs SET lease_until = ? WHERE owner = ? AND "+notEnded, leaseMS(until), owner)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// RunList implements store.RunTx.
func (t *Tx) RunList(ctx context.Context, p store.RunListParams) ([]continuo.Run, error) {
	w := newWhere("1 = 1")
	in(w, "state", p.States)
	w.eq("owner", p.Owner)
	w.eq("dir", p.Dir)
	w.eq("check_name", p.Check)
	w.eq("provider_id", p.ProviderID)
	w.eq("kind", string(p.Kind))
	w.before("lease_until", p.LeaseBefore)
	limit := p.Limit
	if limit <= 0 {
		limit = runListDefault
	}
	return list(t, ctx, scanRun, "SELECT "+runCols+" FROM runs WHERE "+w.sql+" ORDER BY id LIMIT ?", append(w.args, limit)...)
}

// checkEventText refuses what PostgreSQL's text cannot hold (NUL) or
// would refuse (invalid UTF-8), on both engines, so that a log SQLite
// took always moves to PostgreSQL. Nothing is converted: the run service
// owes the store clean text.
func checkEventText(s string) error {
	if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		return errors.New("store: a run event's text must be valid UTF-8 without NUL")
	}
	return nil
}

// RunAppend implements store.RunTx. It updates the run, the row that
// guards the log, before it inserts events (see store's package comment),
// so that two appenders collide on the run, not on an event's key. An
// unknown run is ErrNotFound.
func (t *Tx) RunAppend(ctx context.Context, a store.RunAppend) error {
	for i, e := range a.Events {
		if e.Seq != a.PrevSeq+int64(i)+1 || (e.RunID != "" && e.RunID != a.RunID) {
			return errors.New("store: RunAppend's events must be the run's, numbered on from PrevSeq")
		}
		if err := checkEventText(e.Text); err != nil {
			return err
		}
	}
	if a.DropThrough > 0 && (a.DropFrom < 1 || a.DropFrom > a.DropThrough) {
		return errors.New("store: RunAppend drops DropFrom..DropThrough, 1 ≤ DropFrom ≤ DropThrough")
	}
	err := t.useOnce(ctx, "runs", a.RunID, store.ErrStale, `UPDATE runs SET event_seq = ?, output_bytes = ?, kept_bytes = ?,
		head_seq = ?, dropped_through = ? WHERE id = ? AND event_seq = ?`,
		a.PrevSeq+int64(len(a.Events)), a.OutputBytes, a.KeptBytes, a.HeadSeq, a.DroppedThrough, a.RunID, a.PrevSeq)
	if err != nil {
		return err
	}
	for _, e := range a.Events {
		if _, err := t.exec(ctx, "INSERT INTO run_events (run_id, seq, kind, text, at) VALUES (?, ?, ?, ?, ?)",
			a.RunID, e.Seq, string(e.Kind), e.Text, ms(e.At)); err != nil {
			return err
		}
	}
	if a.DropThrough > 0 {
		_, err = t.exec(ctx, "DELETE FROM run_events WHERE run_id = ? AND seq >= ? AND seq <= ?", a.RunID, a.DropFrom, a.DropThrough)
	}
	return err
}

func scanRunEvent(s scanner) (*continuo.RunEvent, error) {
	var e continuo.RunEvent
	var kind string
	var at int64
	if err := s.Scan(&e.RunID, &e.Seq, &kind, &e.Text, &at); err != nil {
		return nil, err
	}
	e.Kind, e.At = continuo.RunEventKind(kind), fromMS(at)
	return &e, nil
}

// RunEvents implements store.RunTx: a range scan of the primary key that
// reads at most one event more than it returns.
func (t *Tx) RunEvents(ctx context.Context, p store.RunEventsParams) ([]continuo.RunEvent, error) {
	if p.MaxBytes <= 0 {
		return nil, errors.New("store: RunEvents needs MaxBytes > 0")
	}
	limit := p.Limit
	if limit <= 0 {
		limit = runListDefault
	}
	rows, err := t.rows(ctx, "SELECT run_id, seq, kind, text, at FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
		p.RunID, p.AfterSeq, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []continuo.RunEvent
	size := 0
	for rows.Next() {
		e, err := scanRunEvent(rows)
		if err != nil {
			return nil, err
		}
		if size += len(e.Text); len(out) > 0 && size > p.MaxBytes {
			break
		}
		out = append(out, *e)
	}
	return out, t.interpret(rows.Err())
}

// EvidenceAdd implements store.RunTx.
func (t *Tx) EvidenceAdd(ctx context.Context, e continuo.Evidence) error {
	_, err := t.exec(ctx, "INSERT INTO evidence (session_id, run_id, check_name, created_at) VALUES (?, ?, ?, ?)",
		e.SessionID, e.RunID, e.Check, ms(e.CreatedAt))
	return err
}

func scanEvidenceRun(s scanner) (*store.EvidenceRun, error) {
	var out store.EvidenceRun
	var x runScan
	var at int64
	e := &out.Evidence
	if err := s.Scan(append([]any{&e.SessionID, &e.Check, &e.RunID, &at}, x.dest()...)...); err != nil {
		return nil, err
	}
	e.CreatedAt, out.Run = fromMS(at), x.run()
	return &out, nil
}

// EvidenceLatest implements store.RunTx; perCheck ≤ 0 is 1. The session's
// evidence is numbered within each check, newest first, by a window
// function over evidence_latest; the runs are joined to the rows kept.
func (t *Tx) EvidenceLatest(ctx context.Context, sessionID string, perCheck int) ([]store.EvidenceRun, error) {
	if perCheck <= 0 {
		perCheck = 1
	}
	return list(t, ctx, scanEvidenceRun, `SELECT e.ev_session, e.ev_check, e.ev_run, e.ev_at, `+runCols+`
		FROM (SELECT session_id AS ev_session, check_name AS ev_check, run_id AS ev_run, created_at AS ev_at,
				ROW_NUMBER() OVER (PARTITION BY check_name ORDER BY created_at DESC, run_id DESC) AS ev_n
			FROM evidence WHERE session_id = ?) e
		JOIN runs ON runs.id = e.ev_run
		WHERE e.ev_n <= ? ORDER BY e.ev_check, e.ev_at DESC, e.ev_run DESC`, sessionID, perCheck)
}
