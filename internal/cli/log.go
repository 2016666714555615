package cli

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/continuo-dev/continuo/internal/redact"
)

// logLevel parses a log level name; "" is info.
func logLevel(name string) (slog.Level, error) {
	switch name {
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("must be debug, info, warn or error, not %q", name)
}

// newLogger is every command's logger on w: text or json records at level
// and above, every one redacted.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	l, err := logLevel(level)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: l}
	var h slog.Handler
	switch format {
	case "", "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("must be text or json, not %q", format)
	}
	return slog.New(redact.Handler(h)), nil
}

// setLogger applies --log-level and --log-format, else the configuration's
// [log] table.
func (e *env) setLogger() error {
	level, format := e.logLevel, e.logFormat
	if level == "" {
		level = e.cfg.Log.Level
	}
	if format == "" {
		format = e.cfg.Log.Format
	}
	if _, err := logLevel(level); err != nil {
		return fmt.Errorf("%w: --log-level: %v", errUsage, err)
	}
	l, err := newLogger(e.stderr, level, format)
	if err != nil {
		return fmt.Errorf("%w: --log-format: %v", errUsage, err)
	}
	e.log = l
	return nil
}
