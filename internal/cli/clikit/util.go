package clikit

import (
	"os/user"
	"sync"
	"time"
)

// TailBuffer keeps the last 4 KiB written to it (a child's stderr).
type TailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

// Write keeps p, or its last 4 KiB.
func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(p), nil
}

// String is what the buffer holds.
func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// TimeOrNil is t in UTC, or nil (JSON null) for the zero time.
func TimeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

// DefaultActor is the --actor of the audited commands: the user running
// the command, else "unknown".
func DefaultActor() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}
