package as4_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/testkit"
)

// lockedBuffer is a log destination for the handler's goroutines.
type lockedBuffer = testkit.SyncBuffer

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
