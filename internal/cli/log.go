package cli

import (
	"fmt"
	"io"
	"log/slog"
)

// logFlags are --log-format and --log-level, on every long-running
// command (serve, relay, demo, bench): its startup lines and its library
// logs go through the logger they make.
type logFlags struct {
	format string
	level  string
}

// register defines the flags on fs.
func (l *logFlags) register(fs interface {
	StringVar(p *string, name, value, usage string)
}) {
	fs.StringVar(&l.format, "log-format", "text", "log format on stderr: text or json")
	fs.StringVar(&l.level, "log-level", "info", "the least level logged: debug, info, warn or error")
}

// define defines the flags in the group "Logging".
func (l *logFlags) define(fs *flagSet) {
	fs.group("Logging", func() { l.register(fs) })
}

// validate checks the flags' values.
func (l *logFlags) validate() error {
	_, err := l.newLogger(io.Discard)
	return err
}

// newLogger is the logger the flags ask for, writing to w.
func (l *logFlags) newLogger(w io.Writer) (*slog.Logger, error) {
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
