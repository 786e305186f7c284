package clikit

import (
	"fmt"
	"io"
	"log/slog"
)

// LogFlags are --log-format and --log-level, on every long-running
// command (serve, relay, demo, bench): its startup lines and its library
// logs go through the logger they make.
type LogFlags struct {
	format string
	level  string
}

// Register defines the flags on fs.
func (l *LogFlags) Register(fs interface {
	StringVar(p *string, name, value, usage string)
}) {
	fs.StringVar(&l.format, "log-format", "text", "log format on stderr: text or json")
	fs.StringVar(&l.level, "log-level", "info", "the least level logged: debug, info, warn or error")
}

// Define defines the flags in the group "Logging".
func (l *LogFlags) Define(fs *FlagSet) {
	fs.Group("Logging", func() { l.Register(fs) })
}

// Validate checks the flags' values.
func (l *LogFlags) Validate() error {
	_, err := l.NewLogger(io.Discard)
	return err
}

// NewLogger is the logger the flags ask for, writing to w.
func (l *LogFlags) NewLogger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", l.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch l.format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", l.format)
}
