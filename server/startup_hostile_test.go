package server_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/source"
)

// TestRunCancelledDuringTheRetentionCheck: a source's horizons never come
// (the check waits until its context ends); cancelling Run's context ends
// Run at once, with the cancellation and ErrStartCanceled as its error, and the operations
// listener closed.
func TestRunCancelledDuringTheRetentionCheck(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	progress := &syncBuffer{}
	srv, err := server.New(server.Config{Logger: quiet(), Progress: progress, HTTPListen: "127.0.0.1:0",
		Ping: f.pool.Ping, HorizonTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	src := f.source(t, srv, "hang", func(context.Context, pgx.Tx, *txinbox.Message) error { return nil })
	src.horizons, src.gate = []source.Horizon{{What: "t", Figure: "1d", Within: 24 * time.Hour}}, make(chan struct{})
	if err := srv.Add(server.Source{Name: "hang", Scope: "hang", Source: src}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	base := waitForMatch(t, progress, regexp.MustCompile(`health and metrics on (http://\S+)`))
	if code, body := httpGet(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "hang source") {
		t.Errorf("during the check: /readyz = %d %s, want 503 naming the check", code, body)
	}
	if code, _ := httpGet(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("during the check: /healthz = %d, want 200", code)
	}
	if _, body := httpGet(t, base+"/metrics"); !strings.Contains(body, "txinbox_ready 0\n") {
		t.Error("during the check: no txinbox_ready 0")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !errors.Is(err, server.ErrStartCanceled) {
			t.Errorf("Run = %v, want the cancellation and ErrStartCanceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of the cancel")
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), time.Second); err == nil {
		c.Close()
		t.Error("the operations listener still accepts after Run returned")
	}
}
