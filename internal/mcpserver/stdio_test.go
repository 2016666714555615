package mcpserver

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// readLine hands over lines up to the bound and skips a longer one whole,
// so the next line is read from its start.
func TestReadLine(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader("short\n"+strings.Repeat("x", 100)+"\nnext\nlast"), 16)
	type got struct {
		line    string
		tooLong bool
		err     error
	}
	var lines []got
	for {
		l, tooLong, err := readLine(r, 20)
		lines = append(lines, got{string(l), tooLong, err})
		if err != nil {
			break
		}
	}
	want := []got{{"short\n", false, nil}, {"", true, nil}, {"next\n", false, nil}, {"last", false, io.EOF}}
	if len(lines) != len(want) {
		t.Fatalf("lines = %+v, want %+v", lines, want)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, lines[i], want[i])
		}
	}
}
