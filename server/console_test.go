package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/console"
	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/source"
)

// TestConsoleMounted: Config.Console serves the web console at /ui/ once
// Run started, with the server's own sources (readiness from their
// Readier) and scopes filled in; a console without its Admin is refused by
// New, naming the field.
func TestConsoleMounted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv, err := server.New(server.Config{Logger: quiet(), Ping: f.pool.Ping, Console: &console.Config{Admin: f.driver}})
	if err != nil {
		t.Fatal(err)
	}
	handle := func(context.Context, pgx.Tx, *txinbox.Message) error { return nil }
	east := f.source(t, srv, "billing", handle)
	east.ready = errors.New("broker gone")
	east.lag = []source.Lag{{Partition: "invoices/0", Messages: 42}}
	if err := srv.Add(server.Source{Name: "east-kafka", Scope: "billing", Source: east}); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(srv.Handler(), "/ui/"); code != http.StatusServiceUnavailable {
		t.Errorf("/ui/ before Run = %d, want 503", code)
	}
	stop := start(t, srv)
	code, body := get(srv.Handler(), "/ui/")
	for _, want := range []string{"east-kafka", "billing", "broker gone"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("/ui/ = %d; want 200 and %q in:\n%.2000s", code, want, body)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	_, err = server.New(server.Config{Console: &console.Config{}})
	if err == nil || !strings.Contains(err.Error(), "Admin") {
		t.Errorf("a console without Admin: %v, want an error naming Admin", err)
	}
}

// quitter is a source whose Run returns nil at once, as if done.
type quitter struct{}

func (quitter) Run(context.Context) error { return nil }

// TestSourceThatStopsByItselfFails: a source whose Run returns before the
// server stops is a failure naming it, not a silent end while /readyz
// stays ok.
func TestSourceThatStopsByItselfFails(t *testing.T) {
	t.Parallel()
	srv, err := server.New(server.Config{Logger: quiet(), ShutdownTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Add(server.Source{Name: "early", Scope: "s", Source: quitter{}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = srv.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "early source: stopped by itself") {
		t.Errorf("Run = %v, want the early source named", err)
	}
}
