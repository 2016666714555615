package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/continuo-dev/continuo/internal/rpcwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxStdioLine bounds one message on stdio, as the SDK's stdio transport
// does.
const MaxStdioLine = mcp.DefaultMaxLineLength

var newestVersion = slices.Max(mcp.SupportedProtocolVersions())

// ServeStdio serves srv on in and out, one JSON-RPC message per line, until
// in ends or ctx is done.
//
// Lines are read here, not by the SDK's stdio transport, which ends the
// connection (and the process) on the first line that is not a JSON-RPC
// message, leaving requests already read unanswered. A line that is not
// JSON is answered with a parse error, one that is not a JSON-RPC message
// (or a batch, from protocol 2025-06-18 on) with an invalid request, and
// serving goes on; good lines go to the SDK. On the way out, the answer to a
// request the client cancelled is dropped (a receiver of
// notifications/cancelled should not answer), and an error the SDK sends
// with code 0 gets a JSON-RPC code. Both directions share one locked writer.
func ServeStdio(ctx context.Context, srv *mcp.Server, in io.Reader, out io.Writer) error {
	pr, pw := io.Pipe()
	e := &stdioEdge{out: out}
	go e.read(in, pw)
	err := srv.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: e})
	_ = pr.Close() // the reader stops at its next line
	return err
}

type stdioEdge struct {
	calls rpcwire.Calls

	mu      sync.Mutex // guards out, and the fields below
	out     io.Writer
	pending []byte // a partial line the SDK wrote
	version string // the negotiated protocol version, once known
}

// read passes the good lines of in to the SDK through w and answers the bad
// ones itself.
func (e *stdioEdge) read(in io.Reader, w *io.PipeWriter) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r, MaxStdioLine)
		if tooLong {
			e.answer(&rpcwire.Error{Code: rpcwire.CodeInvalidRequest, Message: fmt.Sprintf("invalid request: a message is at most %d bytes", MaxStdioLine)})
		} else if len(bytes.TrimSpace(line)) > 0 {
			if !e.pass(line, w) {
				return // the SDK closed its end
			}
		}
		if err != nil {
			_ = w.CloseWithError(io.EOF)
			return
		}
	}
}

// pass checks one line and hands it to the SDK; false when the SDK no
// longer reads.
func (e *stdioEdge) pass(line []byte, w io.Writer) bool {
	e.mu.Lock()
	// Batches went away in 2025-06-18; before initialize the SDK, like us,
	// takes the oldest protocol.
	batchOK := e.version == "" || e.version < "2025-06-18"
	e.mu.Unlock()
	msgs, batch, perr := rpcwire.Parse(line, batchOK)
	if perr != nil {
		e.answer(perr)
		return true
	}
	for _, m := range msgs {
		switch {
		case m.Method == "initialize":
			// The SDK settles the version as it reads the request, before
			// its answer reaches Write: take the version it will settle on,
			// the one asked for if supported, else its newest.
			e.mu.Lock()
			e.version = newestVersion
			if slices.Contains(mcp.SupportedProtocolVersions(), m.Version) {
				e.version = m.Version
			}
			e.mu.Unlock()
		case m.Cancels != "":
			e.calls.Cancel(m.Cancels)
		}
		if m.IsCall() && !batch { // the answers to a batch come back as one
			e.calls.Start(m.Key)
		}
	}
	if line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	_, err := w.Write(line)
	return err == nil
}

// answer writes an error response of the edge's own.
func (e *stdioEdge) answer(perr *rpcwire.Error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.out.Write(append(perr.Response(), '\n'))
}

// Write takes what the SDK writes: whole lines, each one message.
func (e *stdioEdge) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pending = append(e.pending, p...)
	for {
		i := bytes.IndexByte(e.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := e.pending[:i]
		o := rpcwire.Inspect(line)
		if o.ProtocolVersion != "" {
			e.version = o.ProtocolVersion
		}
		if o.Key == "" || !e.calls.End(o.Key, nil) {
			if _, err := e.out.Write(append(o.Msg, '\n')); err != nil {
				return 0, err
			}
		}
		e.pending = e.pending[i+1:]
	}
}

// Close is the SDK's end of the connection; stdout stays open.
func (e *stdioEdge) Close() error { return nil }

// readLine reads one line of at most max bytes; a longer one is read to its
// end and reported tooLong. err is io.EOF (or the read error) after the
// last line.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, tooLong, err
		}
	}
}
