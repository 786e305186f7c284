package console_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4my"
	"github.com/txinbox/txinbox/console"
	"github.com/txinbox/txinbox/console/as4view"
	"github.com/txinbox/txinbox/console/ediview"
	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/outbox/outboxmy"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// TestBrowserMySQL is TestBrowser on MySQL (MariaDB): the same pages and
// actions through Chromium, the AS4 page over as4my.
func TestBrowserMySQL(t *testing.T) {
	e := newMyEnv(t)
	ctx := browser(t, "ops", "s3cret")
	browse(t, ctx, e)
}

// myEnv is env on a MySQL or MariaDB database of its own.
type myEnv struct {
	t      *testing.T
	ctx    context.Context
	db     *sql.DB
	driver *mysqlstore.Driver
	as4    *as4my.Store
	proc   *txinbox.Processor[*sql.Tx]
	fail   atomic.Bool
	srv    *httptest.Server
}

func newMyEnv(t *testing.T) *myEnv {
	t.Helper()
	e := &myEnv{t: t, ctx: context.Background(), db: mysqltest.Open(t, mysqltest.NewDatabase(t), 8)}
	d, err := mysqlstore.New(e.db, mysqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.driver = d
	if err := d.Migrate(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.exec(`CREATE TABLE effects (id VARBINARY(2048) NOT NULL) ENGINE=InnoDB`)
	e.proc, err = txinbox.NewProcessor[*sql.Tx](d, txinbox.Config[*sql.Tx]{Scope: scope, Logger: quiet(),
		Handler: func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO effects VALUES (?)`, m.ID); err != nil {
				return err
			}
			if e.fail.Load() {
				return txinbox.Permanent(errors.New("partner unknown: <b>bold</b>"))
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.proc.Close)
	if e.as4, err = as4my.New(e.db, as4my.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := e.as4.Migrate(e.ctx); err != nil {
		t.Fatal(err)
	}
	h, err := console.New(console.Config{Admin: d, Outbox: outboxmy.New(d), AS4: as4view.Lister(e.as4), EDI: ediview.Read, Auth: admin,
		Logger: quiet(), Scopes: []console.Scope{{Name: scope, Retention: 24 * time.Hour}}, Sources: []console.Source{
			{Name: "invoices-queue", Scope: scope, Ready: func(context.Context) error { return nil },
				Lag: func(context.Context) ([]source.Lag, error) { return []source.Lag{{Messages: 12}}, nil }},
			{Name: "orders-queue", Scope: scope, Ready: func(context.Context) error { return errors.New("connecting to the broker") }},
		}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ui/", h)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

func (e *myEnv) url() string { return e.srv.URL }

func (e *myEnv) exec(q string, args ...any) {
	e.t.Helper()
	if _, err := e.db.ExecContext(e.ctx, q, args...); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
}

func (e *myEnv) process(msgs ...*txinbox.Message) []txinbox.Outcome {
	e.t.Helper()
	res, err := e.proc.Process(e.ctx, msgs)
	if err != nil {
		e.t.Fatalf("Process: %v", err)
	}
	var out []txinbox.Outcome
	for _, r := range res {
		out = append(out, r.Outcome)
	}
	return out
}

func (e *myEnv) deadLetter(id, payload string) int64 {
	e.t.Helper()
	e.fail.Store(true)
	defer e.fail.Store(false)
	if out := e.process(msg(id, payload)); out[0] != txinbox.DeadLettered {
		e.t.Fatalf("outcome = %v, want dead-lettered", out[0])
	}
	in, err := e.driver.Inspect(e.ctx, store.Key{Scope: scope, MessageID: id})
	if err != nil || in.DeadLetter == nil {
		e.t.Fatalf("Inspect(%s) = %+v, %v", id, in, err)
	}
	return in.DeadLetter.ID
}

func (e *myEnv) deadLettered(id string) bool {
	in, _ := e.driver.Inspect(e.ctx, store.Key{Scope: scope, MessageID: id})
	return in.DeadLetter != nil
}

func (e *myEnv) effects(id string) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRowContext(e.ctx, `SELECT count(*) FROM effects WHERE id = ?`, id).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *myEnv) wantAudit(action, actor, reason string) {
	e.t.Helper()
	var n int
	err := e.db.QueryRowContext(e.ctx, `SELECT count(*) FROM txinbox_audit WHERE action = ? AND actor = ? AND reason = ?`,
		action, actor, reason).Scan(&n)
	if err != nil || n != 1 {
		e.t.Errorf("audit rows (%s, %s, %s) = %d, %v; want 1", action, actor, reason, n, err)
	}
}

func (e *myEnv) httpKey(route, key string) bool { return storeHTTPKey(e.t, e.driver, route, key) }

// seed is env.seed on MySQL: processed messages and a drift, older inbox
// rows over the last hour, an outbox row failed for good, and an AS4
// message with its receipt (stored by as4my, in a transaction of the
// inbox's connections).
func (e *myEnv) seed() {
	e.t.Helper()
	for i := range 3 {
		e.process(msg(fmt.Sprintf("inv-%d", i+1), "payload"))
	}
	e.process(msg("inv-1", "another payload")) // drift
	now := time.Now()
	var rows []string
	var args []any
	for g := 1; g <= 1200; g++ {
		if (g%58)%7 == 3 {
			continue
		}
		src := "invoices-queue"
		if g%3 == 0 {
			src = "orders-queue"
		}
		rows = append(rows, "(?, ?, ?, '', '', 0x00, ?, ?)")
		args = append(args, scope, fmt.Sprintf("hist-%d", g), src,
			mysqlstore.FormatTime(now.Add(-time.Duration(g%58)*time.Minute-30*time.Second)), mysqlstore.FormatTime(now))
	}
	e.exec(`INSERT INTO txinbox_inbox (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at)
		VALUES `+strings.Join(rows, ", "), args...)
	e.exec("INSERT INTO txinbox_outbox (scope, message_id, part, topic, `key`, payload, attempts, last_error, failed_at)"+
		" VALUES (?, 'inv-1', 0, 'erp.invoices', 'partner-7', 'x', 8, 'target refused: 422 unknown partner', UTC_TIMESTAMP(6))", scope)
	tx, err := e.db.BeginTx(e.ctx, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	m := &as4.Received{Scope: "as4", Key: "PartyA|urn:oasis:names:tc:ebcore:partyid-type:unregistered|msg-1@partner-a", SOAPVersion: "1.2",
		UserMessage: as4.UserMessage{MessageID: "msg-1@partner-a", Action: "Deliver", ConversationID: "conv-1"},
		Fingerprint: []byte{0}, ReceivedAt: now,
		Receipt: as4.StoredReceipt{MessageID: "receipt-1@txinbox", ContentType: "application/soap+xml",
			Body: []byte("<S12:Envelope><eb:Receipt>non-repudiation</eb:Receipt></S12:Envelope>")}}
	if err := e.as4.Save(e.ctx, tx, m); err != nil {
		e.t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		e.t.Fatal(err)
	}
}
