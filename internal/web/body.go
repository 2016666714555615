package web

import (
	"bytes"
	"io"
	"net/http"
)

// readBody reads a whole request body of at most limit bytes.
func readBody(r *http.Request, limit int64) (io.ReadCloser, error) {
	defer r.Body.Close()
	var buf bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength <= limit {
		buf.Grow(int(r.ContentLength))
	}
	if _, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, limit)); err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}
