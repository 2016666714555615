package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/continuo-dev/continuo"
	"github.com/continuo-dev/continuo/internal/auth"
	"github.com/continuo-dev/continuo/internal/store/sqlite"
	"github.com/continuo-dev/continuo/internal/workflow"
)

// inproc is the server's write path without the server: workflow.Service
// over internal/store/sqlite on a fresh database, in this process. Keyed
// posts through it, against the raw baseline, separate the cost of the
// storage path (group commit, savepoints, session counters, idempotency
// record) from the cost of HTTP, MCP and JSON-RPC.
type inproc struct {
	st       *sqlite.DB
	wf       *workflow.Service
	caller   *continuo.Caller
	sessions []string
	commits  atomic.Int64
	writes   atomic.Int64
	commitNS atomic.Int64
}

func openInproc(dir string, sessions int) (*inproc, error) {
	ctx := context.Background()
	ip := &inproc{}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "continuo.db"), &sqlite.Options{OnCommit: func(d time.Duration, n int) {
		ip.commits.Add(1)
		ip.writes.Add(int64(n))
		ip.commitNS.Add(int64(d))
	}})
	if err != nil {
		return nil, err
	}
	ip.st = st
	a := auth.New(st, nil)
	tok, _, err := a.Bootstrap(ctx, &auth.ProjectSpec{Name: "bench"}, true)
	if err != nil {
		st.Close()
		return nil, err
	}
	if ip.caller, err = a.Authenticate(ctx, tok.Token); err != nil {
		st.Close()
		return nil, err
	}
	ip.wf = workflow.New(st, a, nil)
	for i := 0; i < sessions; i++ {
		r, err := ip.wf.WorkOnProject(ctx, ip.caller, workflow.WorkOn{Project: "bench",
			Instruction: fmt.Sprintf("benchmark: in-process keyed posts, writer %d", i)})
		if err != nil {
			st.Close()
			return nil, err
		}
		ip.sessions = append(ip.sessions, r.Session.ID)
	}
	return ip, nil
}

func (ip *inproc) close() { ip.st.Close() }

// run has `workers` goroutines post keyed messages (goroutine i into
// session i) for d, as postLoop does over MCP.
func (ip *inproc) run(workers int, d time.Duration, tag string) (postResult, commitStatsT, error) {
	ctx := context.Background()
	c0, w0, s0 := ip.commits.Load(), ip.writes.Load(), ip.commitNS.Load()
	var next atomic.Int64
	lats := make([][]time.Duration, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for time.Now().Before(deadline) {
				i := int(next.Add(1))
				t0 := time.Now()
				if _, _, err := ip.wf.PostMessage(ctx, ip.caller, workflow.Post{SessionID: ip.sessions[w], Kind: continuo.KindProgress,
					Text: messageText(i, w), DeliveryKey: tag + "-" + strconv.Itoa(i)}); err != nil {
					errs[w] = err
					return
				}
				lats[w] = append(lats[w], time.Since(t0))
			}
		}(w)
	}
	wg.Wait()
	res := postResult{Elapsed: time.Since(start)}
	for w := range lats {
		if errs[w] != nil {
			return res, commitStatsT{}, errs[w]
		}
		res.N += len(lats[w])
		res.Lat = append(res.Lat, lats[w]...)
	}
	cs := commitStatsT{writes: float64(ip.writes.Load() - w0), commits: float64(ip.commits.Load() - c0),
		seconds: float64(ip.commitNS.Load()-s0) / 1e9}
	return res, cs, nil
}
