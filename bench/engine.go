package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// engine is what the SQLite and the PostgreSQL run do differently: how the
// store and the server processes start, the throughput phases (and their
// baseline), and how the large session is filled. runEngine is the run
// both share.
type engine interface {
	traits() engineTraits
	// open makes the store and starts the server(s) on it; it returns the
	// report's first lines.
	open(c config, h harness, work string) ([]string, error)
	// close kills what open started and removes what it made (unless -keep).
	close()
	// server is the server the clients talk to (on PostgreSQL replica A).
	server() *server
	// cli runs a continuo command against the store.
	cli(h harness, work string, args ...string) error
	// throughput runs the interleaved throughput phases and returns their rows.
	throughput(c config, h harness, env *[]string) ([]row, error)
	// fill brings session sBig up to c.bigN messages and returns the
	// report's line about it. It may restart the server, closing and
	// redialling *hc.
	fill(c config, h harness, work string, hc *mcpClient, sBig string) (string, error)
	// after runs what the engine measures or checks after the handoff
	// reads, with the handoff client, and returns its rows.
	after(c config, hc mcpClient, sBig string, p50s time.Duration, env *[]string) ([]row, error)
	// memoryRows reports the server's memory idle and after the handoff
	// reads of the large session big.
	memoryRows(big string, idle, after memory) []row
}

// engineTraits are an engine's fixed differences in the shared run.
type engineTraits struct {
	name       string // in log lines
	handoff    string // the handoff rows' label, e.g. "handoff p50, S100 (no root)"
	handoffCap bool   // the large session's handoff p50 is also held to < 5 ms
	gitRoot    bool   // also a project with a git root, and a handoff in it
	handoffUse string // what the handoff client is used for, in the report
	runTime    string // the run time line's name
}

// runEngine is one engine's run: the server(s) on a fresh store, idle
// memory, the throughput phases, then the handoff of a 100-message session
// against a c.bigN-message one, and the report.
func runEngine(c config, h harness, e engine) error {
	started := time.Now()
	t := e.traits()
	work := filepath.Join(h.tmp, "work") // not a git checkout: no project is bootstrapped
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	defer e.close()
	env, err := e.open(c, h, work)
	if err != nil {
		return err
	}

	// ---- start, idle RSS, projects ----
	srv := e.server()
	token := srv.Token
	time.Sleep(500 * time.Millisecond)
	memIdle, err := readMemory(srv.pid())
	if err != nil {
		return err
	}
	logf("%s: server pid %d at %s, idle RSS %s", t.name, srv.pid(), srv.URL, mbStr(memIdle.RSS))
	if err := e.cli(h, work, "project", "add", "bench", "--grant", "admin:write"); err != nil {
		return err
	}
	gitProject := ""
	if _, err := exec.LookPath("git"); err == nil && t.gitRoot {
		repo := filepath.Join(h.tmp, "repo")
		if err := os.MkdirAll(repo, 0o755); err != nil {
			return err
		}
		if err := gitRepo(repo); err != nil {
			logf("no git-root project: %v", err)
		} else if err := e.cli(h, work, "project", "add", "benchgit", "--root", repo, "--grant", "admin:write"); err != nil {
			return err
		} else {
			gitProject = "benchgit"
		}
	}

	// ---- throughput ----
	rows, err := e.throughput(c, h, &env)
	if err != nil {
		return err
	}
	if c.postsOnly {
		srv.stop()
		env = append(env, "load average at end: "+loadavg(), t.runTime+": "+time.Since(started).Round(time.Second).String())
		report(c, env, rows)
		return nil
	}

	// ---- handoff: a 100-message session against a c.bigN-message one ----
	primary := c.kinds[0]
	hc, err := dial(primary, srv.URL, token)
	if err != nil {
		return err
	}
	env = append(env, t.handoffUse+" use the "+clientLabel(primary, hc.protocol()))
	newSession := func(project, instr string) (string, error) {
		r, err := hc.call(bgctx, "work_on_project", map[string]any{"project": project, "instruction": instr})
		if err != nil {
			return "", err
		}
		return r["session_id"].(string), nil
	}
	s100, err := newSession("bench", "benchmark: handoff of a session with 100 messages")
	if err != nil {
		return err
	}
	sBig, err := newSession("bench", fmt.Sprintf("benchmark: handoff of a session with %d messages", c.bigN))
	if err != nil {
		return err
	}
	small := []string{s100}
	sGit := ""
	if gitProject != "" {
		if sGit, err = newSession(gitProject, "benchmark: handoff of a session in a project with a git root"); err != nil {
			return err
		}
		small = append(small, sGit)
	}
	for _, sid := range small {
		if _, err := postAll([]mcpClient{hc}, []string{sid}, 100, "s100-"+sid, kindFor); err != nil {
			return err
		}
	}
	fillNote, err := e.fill(c, h, work, &hc, sBig)
	if err != nil {
		return err
	}
	srv = e.server()
	for sid, want := range map[string]int{s100: 100, sBig: c.bigN} {
		if err := checkCount(hc, sid, want); err != nil {
			return err
		}
	}
	hs := []string{s100, sBig}
	if sGit != "" {
		hs = append(hs, sGit)
	}
	logf("handoff reads: %d warm-up + %d measured per session, interleaved", c.warm, c.handoffs)
	lat, err := handoffLatencies(hc, hs, c.warm, c.handoffs)
	if err != nil {
		return err
	}
	memAfter, err := readMemory(srv.pid())
	if err != nil {
		return err
	}
	p50s, p95s := percentile(lat[0], .5), percentile(lat[0], .95)
	p50b, p95b := percentile(lat[1], .5), percentile(lat[1], .95)
	logf("  S100 p50 %s p95 %s; S%d p50 %s p95 %s; RSS %s", msStr(p50s), msStr(p95s), c.bigN, msStr(p50b), msStr(p95b), mbStr(memAfter.RSS))
	after, err := e.after(c, hc, sBig, p50s, &env)
	if err != nil {
		return err
	}
	hc.close()
	srv.stop()

	// ---- table ----
	big := fmt.Sprintf("S%dk", c.bigN/1000)
	hr := float64(p50b) / float64(p50s)
	bigTarget, bigOK := "≤ 1.50×", hr <= 1.5
	if t.handoffCap {
		bigTarget, bigOK = "≤ 1.50×, < 5 ms", bigOK && p50b < 5*time.Millisecond
	}
	rows = append(rows,
		row{"handoff p50, S100 (" + t.handoff + ")", msStr(p50s), "—", "—", "< 5 ms", passFail(p50s < 5*time.Millisecond)},
		row{"handoff p95, S100 (" + t.handoff + ")", msStr(p95s), "—", "—", "—", "info"},
		row{fmt.Sprintf("handoff p50, %s (%s)", big, t.handoff), msStr(p50b), msStr(p50s) + " (S100)", ratioStr(hr), bigTarget, passFail(bigOK)},
		row{fmt.Sprintf("handoff p95, %s (%s)", big, t.handoff), msStr(p95b), msStr(p95s) + " (S100)", ratioStr(float64(p95b) / float64(p95s)), "—", "info"},
	)
	if sGit != "" {
		pg, pg95 := percentile(lat[2], .5), percentile(lat[2], .95)
		rows = append(rows, row{"handoff p50 / p95, S100 in a git-root project", msStr(pg) + " / " + msStr(pg95),
			msStr(p50s) + " (S100)", ratioStr(float64(pg) / float64(p50s)), "—", "info"})
	}
	rows = append(rows, e.memoryRows(big, memIdle, memAfter)...)
	rows = append(rows, after...)
	env = append(env, fillNote, "load average at end: "+loadavg(), t.runTime+": "+time.Since(started).Round(time.Second).String())
	report(c, env, rows)
	return nil
}
