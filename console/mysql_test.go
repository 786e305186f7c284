package console_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/console"
	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/metrics/prom"
	"github.com/txinbox/txinbox/outbox/outboxmy"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// TestMySQL serves every page but AS4's over a MySQL (MariaDB) inbox: a
// processed message, a duplicate and a dead letter show, and the
// timeline's bars.
func TestMySQL(t *testing.T) {
	ctx := context.Background()
	d, err := mysqlstore.New(mysqltest.Open(t, mysqltest.NewDatabase(t), 4), mysqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := prom.New(prom.Options{})
	reg.MustRegister(m)
	p, err := txinbox.NewProcessor[*sql.Tx](d, txinbox.Config[*sql.Tx]{Scope: scope, Logger: quiet(), Hooks: []txinbox.Hook{m},
		Handler: func(_ context.Context, _ *sql.Tx, m *txinbox.Message) error {
			if m.ID == "bad" {
				return txinbox.Permanent(errors.New("refused"))
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if _, err := p.Process(ctx, []*txinbox.Message{msg("a", "A"), msg("bad", "B"), msg("a", "A")}); err != nil {
		t.Fatal(err)
	}
	h, err := console.New(console.Config{Admin: d, Outbox: outboxmy.New(d), Gatherer: reg, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for _, path := range []string{"/ui/", "/ui/dead-letters", "/ui/dead-letters/1", "/ui/drift", "/ui/inspect?scope=invoices&id=a", "/ui/outbox"} {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d: %s", path, resp.StatusCode, b)
		}
		want := map[string][]string{
			"/ui/":               {`class="bar processed"`, `class="bar dead-lettered"`, "<td>duplicate</td>"},
			"/ui/dead-letters/1": {"refused"},
		}[path]
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				t.Errorf("GET %s over MySQL lacks %s", path, w)
			}
		}
	}
}
