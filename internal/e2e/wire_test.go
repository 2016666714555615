package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/continuo-dev/continuo/internal/syncbuf"
)

// rawStdio is a `continuo stdio` process driven with raw lines, as a client
// that gets things wrong would drive it.
type rawStdio struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string // every line of stdout, closed at EOF
	stderr *syncbuf.Buffer
}

func startRawStdio(t *testing.T, dataDir string, args ...string) *rawStdio {
	t.Helper()
	cmd := command(dataDir, append([]string{"stdio"}, args...)...)
	cmd.Dir = t.TempDir()
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &rawStdio{t: t, cmd: cmd, in: in, lines: make(chan string, 100), stderr: stderr}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		noRace(t, "continuo stdio", stderr.String())
	})
	return r
}

// send writes raw lines to the server's stdin.
func (r *rawStdio) send(lines ...string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, strings.Join(lines, "\n")+"\n"); err != nil {
		r.t.Fatalf("write to stdio: %v", err)
	}
}

// rpcResponse is a JSON-RPC response as it arrived.
type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Method string `json:"method"`
	raw    string
}

// next returns the next message on stdout, failing after a deadline.
func (r *rawStdio) next() (rpcResponse, bool) {
	r.t.Helper()
	select {
	case l, ok := <-r.lines:
		if !ok {
			return rpcResponse{}, false
		}
		var m rpcResponse
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			r.t.Fatalf("stdout line is not JSON: %q", l)
		}
		m.raw = l
		return m, true
	case <-time.After(30 * time.Second):
		r.t.Fatalf("no answer on stdout within 30 s; stderr:\n%s", r.stderr.String())
	}
	return rpcResponse{}, false
}

// answers reads responses until it has one for each id (by their JSON
// text, "null" for an error without id) and returns them by id.
func (r *rawStdio) answers(ids ...string) map[string][]rpcResponse {
	r.t.Helper()
	want := map[string]int{}
	for _, id := range ids {
		want[id]++
	}
	got := map[string][]rpcResponse{}
	var seen []string
	for n := 0; n < len(ids); {
		m, ok := r.next()
		if !ok {
			r.t.Fatalf("stdout ended with %d of %d answers:\n%s\nstderr:\n%s", n, len(ids), strings.Join(seen, "\n"), r.stderr.String())
		}
		seen = append(seen, m.raw)
		if m.Method != "" {
			continue // a notification of the server's
		}
		id := string(m.ID)
		got[id] = append(got[id], m)
		if len(got[id]) <= want[id] {
			n++
		}
	}
	return got
}

// closeAndWait closes stdin and returns the exit status and what else
// arrived on stdout.
func (r *rawStdio) closeAndWait() (int, []rpcResponse) {
	r.t.Helper()
	_ = r.in.Close()
	var rest []rpcResponse
	for {
		m, ok := r.next()
		if !ok {
			break
		}
		rest = append(rest, m)
	}
	err := r.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), rest
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return 0, rest
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestStdioMalformedLines: a line that is not JSON, not a JSON-RPC message,
// or a batch (which 2025-11-25 does not have) is answered with a JSON-RPC
// parse error or invalid request, and the server keeps serving; every
// request before and after it is answered, and closing stdin ends the
// server with status 0.
func TestStdioMalformedLines(t *testing.T) {
	data := dataDir(t, "sqlite")
	s := startRawStdio(t, data)
	s.send(initLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{this is not json`,
		`{"id":3,"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":4,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":5,"method":"no/such/method"}`,
		`"just a string"`,
		`{"jsonrpc":"2.0","id":6,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}`,
	)
	got := s.answers("1", "2", "null", "3", "null", "null", "5", "null", "6", "7")
	for id, want := range map[string]int64{"3": -32600, "5": -32601} {
		if e := got[id][0].Error; e == nil || e.Code != want {
			t.Errorf("id %s: %s, want error %d", id, got[id][0].raw, want)
		}
	}
	codes := map[int64]int{}
	for _, m := range got["null"] {
		if m.Error == nil {
			t.Fatalf("a response without id that is no error: %s", m.raw)
		}
		codes[m.Error.Code]++
	}
	if codes[-32700] != 1 || codes[-32600] != 3 {
		t.Errorf("errors without id: %v, want one parse error (-32700) and three invalid requests (-32600)", codes)
	}
	for _, id := range []string{"1", "2", "6", "7"} {
		if m := got[id][0]; m.Error != nil || m.Result == nil {
			t.Errorf("id %s: %s, want a result", id, m.raw)
		}
	}
	if !strings.Contains(string(got["7"][0].Result), `"projects"`) {
		t.Errorf("tools/call after the bad lines: %s", got["7"][0].raw)
	}
	code, rest := s.closeAndWait()
	if code != 0 || len(rest) != 0 {
		t.Errorf("after stdin closed: exit status %d, further output %v; want 0 and none\n%s", code, rest, s.stderr.String())
	}
}
