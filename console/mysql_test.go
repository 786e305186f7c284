package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4my"
	"github.com/txinbox/txinbox/console"
	"github.com/txinbox/txinbox/console/as4view"
	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/outbox/outboxmy"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// TestMySQL serves every page over a MySQL (MariaDB) inbox: a processed
// message, a duplicate and a dead letter show, the timeline's bars, and
// an AS4 message stored by as4my with its receipt.
func TestMySQL(t *testing.T) {
	ctx := context.Background()
	d, err := mysqlstore.New(mysqltest.Open(t, mysqltest.NewDatabase(t), 4), mysqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	reg := processOneOfEach(t, d)
	as4s, err := as4my.New(d.DB(), as4my.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := as4s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	tx, err := d.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	if err := as4s.Save(ctx, tx, &as4.Received{Scope: "as4", Key: "A|t|m-1@😀", ReceivedAt: time.Now(), Fingerprint: []byte{0},
		UserMessage: as4.UserMessage{MessageID: "m-1@😀", Action: "Deliver"}, Parts: []as4.Part{{Data: []byte("<a/>")}},
		Receipt: as4.StoredReceipt{MessageID: "receipt-1@txinbox", Body: []byte("<Receipt/>")}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	h, err := console.New(console.Config{Admin: d, Outbox: outboxmy.New(d), AS4: as4view.Lister(as4s), Gatherer: reg, Logger: quiet()})
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
		want := map[string][]string{
			"/ui/":               {`class="bar processed"`, `class="bar dead-lettered"`, "<td>duplicate</td>"},
			"/ui/dead-letters/1": {"refused"},
			"/ui/as4":            {"m-1@😀", "receipt-1@txinbox"},
		}[path]
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				t.Errorf("GET %s over MySQL lacks %s", path, w)
			}
		}
	}
}
