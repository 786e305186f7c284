package console_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4/as4sqlite"
	"github.com/txinbox/txinbox/console"
	"github.com/txinbox/txinbox/console/as4view"
	"github.com/txinbox/txinbox/internal/testkit/sqlitetest"
	"github.com/txinbox/txinbox/metrics/prom"
	"github.com/txinbox/txinbox/outbox/outboxlite"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// TestSQLite serves every page over a SQLite inbox, with this process's
// outcome counters from a Prometheus registry.
func TestSQLite(t *testing.T) {
	ctx := context.Background()
	d := sqlitetest.Open(t)
	as4s, err := as4sqlite.New(d.DB(), as4sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := as4s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	reg := processOneOfEach(t, d)
	if _, err := d.DB().Exec(`INSERT INTO txinbox_as4_messages (scope, message_key, message_id, ref_to_message_id, sent_at,
		from_party, from_party_type, to_party, to_party_type, service, service_type, action, conversation_id, soap_version,
		user_message, fingerprint, receipt_message_id, receipt_content_type, receipt, received_at)
		VALUES ('as4', 'k1', 'msg-1@partner-a', '', '', 'PartyA', '', 'PartyB', '', 'urn:invoice', '', 'Deliver', 'c1', '1.2',
		'<eb:UserMessage/>', X'00', 'receipt-1@txinbox', 'application/soap+xml', CAST('<Receipt/>' AS BLOB), '2026-12-01T10:00:00.000000000Z')`); err != nil {
		t.Fatal(err)
	}
	h, err := console.New(console.Config{Admin: d, Outbox: outboxlite.New(d), AS4: as4view.Lister(as4s), Gatherer: reg, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for _, path := range []string{"/ui/", "/ui/dead-letters", "/ui/dead-letters/1", "/ui/drift", "/ui/inspect?scope=invoices&id=a", "/ui/outbox", "/ui/as4"} {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d: %s", path, resp.StatusCode, b)
		}
		if path == "/ui/as4" && (!strings.Contains(string(b), "msg-1@partner-a") || !strings.Contains(string(b), "&lt;Receipt/&gt;")) {
			t.Errorf("the AS4 page over SQLite lacks the message and its receipt:\n%s", b)
		}
		if path == "/ui/" {
			for _, want := range []string{`class="bar processed"`, `class="bar dead-lettered"`, "<td>duplicate</td>"} {
				if !strings.Contains(string(b), want) {
					t.Errorf("the overview over SQLite lacks %s", want)
				}
			}
		}
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	d, err := sqlitestore.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	for _, tc := range []struct {
		cfg  console.Config
		want string
	}{
		{console.Config{}, "Config.Admin"},
		{console.Config{Admin: d, Prefix: "/ui"}, "Config.Prefix"},
		{console.Config{Admin: d, Auth: console.Auth{Users: map[string]string{"ops": ""}}}, "Config.Auth.Users"},
		{console.Config{Admin: d, Sources: []console.Source{{}}}, "Config.Sources[0].Name"},
		{console.Config{Admin: d, Scopes: []console.Scope{{Name: "x", Retention: -1}}}, "Config.Scopes[0]"},
	} {
		if _, err := console.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	if _, err := console.New(console.Config{Admin: d}); err != nil {
		t.Errorf("New with only Admin: %v", err)
	}
}

// processOneOfEach processes, on d, message a twice and message bad
// (refused for good), counted by txinbox's metrics in the registry it
// returns: a processed message, a duplicate and a dead letter.
func processOneOfEach(t *testing.T, d store.Driver[*sql.Tx]) *prometheus.Registry {
	t.Helper()
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
	if _, err := p.Process(context.Background(), []*txinbox.Message{msg("a", "A"), msg("bad", "B"), msg("a", "A")}); err != nil {
		t.Fatal(err)
	}
	return reg
}
