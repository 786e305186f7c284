package as4_test

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4sqlite"
	"github.com/txinbox/txinbox/store/sqlitestore"
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
	ctx := context.Background()
	driver, err := sqlitestore.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlitestore.Options{})
	must(t, err)
	t.Cleanup(func() { driver.Close() })
	must(t, driver.Migrate(ctx))
	st, err := as4sqlite.New(driver.DB(), as4sqlite.Options{})
	must(t, err)
	must(t, st.Migrate(ctx))
	var logs lockedBuffer
	h, err := as4.New(driver, as4.Config[*sql.Tx]{Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Deliver: func(context.Context, *sql.Tx, *as4.Received) error { return nil }, Inbox: txinbox.Config[*sql.Tx]{Logger: quiet}})
	must(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	resp, err := http.Post(srv.URL, "application/soap+xml", strings.NewReader(`<Envelope xmlns="http://www.w3.org/2003/05/soap-envelope"><Body/></Envelope>`))
	must(t, err)
	resp.Body.Close()
	if out := logs.String(); !strings.Contains(out, "ebMS error answered") || strings.Contains(out, "<nil>") {
		t.Errorf("log: %q", out)
	}
}
