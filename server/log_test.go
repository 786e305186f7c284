package server_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/purge"
	"github.com/txinbox/txinbox/server"
)

// TestPurgerStartedLogLine: the purger's start is logged with txinbox's
// duration syntax (30d, 1m: what the flags take), without an empty scope list.
func TestPurgerStartedLogLine(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var log syncBuffer
	srv, err := server.New(server.Config{Logger: slog.New(slog.NewTextHandler(&log, nil)),
		Purge: &purge.Config{Interval: time.Minute}, Purger: f.driver})
	if err != nil {
		t.Fatal(err)
	}
	handle := func(context.Context, pgx.Tx, *txinbox.Message) error { return nil }
	if err := srv.Add(server.Source{Name: "east", Scope: "east", Source: f.source(t, srv, "east", handle)}); err != nil {
		t.Fatal(err)
	}
	if err := start(t, srv)(); err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "purger started") {
			line = l
		}
	}
	if !strings.Contains(line, "retention=30d interval=1m") || strings.Contains(line, "scopes") {
		t.Errorf("purger started line %q, want retention=30d interval=1m and no scopes", line)
	}
}
