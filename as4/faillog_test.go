package as4_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log destination for the handler's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestErrorLogHasNoNilErr: the line of an ebMS error without an
// underlying error carries no err=<nil>.
func TestErrorLogHasNoNilErr(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	e := newSQLite(t, options{logger: slog.New(slog.NewTextHandler(&logs, nil))})
	resp, err := http.Post(e.url, "application/soap+xml", strings.NewReader(`<Envelope xmlns="http://www.w3.org/2003/05/soap-envelope"><Body/></Envelope>`))
	must(t, err)
	resp.Body.Close()
	if out := logs.String(); !strings.Contains(out, "ebMS error answered") || strings.Contains(out, "<nil>") {
		t.Errorf("log: %q", out)
	}
}
