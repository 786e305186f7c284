package invoicer

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/edi/edifact"
	"github.com/txinbox/txinbox/internal/testkit/sqlitetest"
	"github.com/txinbox/txinbox/outbox/outboxlite"
	"github.com/txinbox/txinbox/outbox/outboxpg"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

// handlerEnv is one database with the invoicer's tables, for either store.
type handlerEnv[TTx any] struct {
	driver  store.Driver[TTx]
	handler txinbox.HandlerFunc[TTx]
	query   func(q string, dest ...any) error
	// rows runs q and scans one string per row.
	rows func(q string) ([]string, error)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var testConfig = Config{Sender: testSender, Partners: map[string]edifact.Party{"ACME": testRecipient}}

func pgEnv(t *testing.T) *handlerEnv[pgx.Tx] {
	pool := schemaPool(t)
	ctx := context.Background()
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := MigratePostgreSQL(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := MigratePostgreSQL(ctx, pool); err != nil {
		t.Fatalf("second migration: %v", err)
	}
	h, err := PostgreSQL(outboxpg.New(d), testConfig)
	if err != nil {
		t.Fatal(err)
	}
	return &handlerEnv[pgx.Tx]{driver: d, handler: h,
		query: func(q string, dest ...any) error { return pool.QueryRow(ctx, q).Scan(dest...) },
		rows: func(q string) ([]string, error) {
			rows, _ := pool.Query(ctx, q)
			return pgx.CollectRows(rows, pgx.RowTo[string])
		}}
}

func sqliteEnv(t *testing.T) *handlerEnv[*sql.Tx] {
	ctx := context.Background()
	d := sqlitetest.Open(t)
	for range 2 {
		if err := MigrateSQLite(ctx, d.DB()); err != nil {
			t.Fatal(err)
		}
	}
	h, err := SQLite(outboxlite.New(d), testConfig)
	if err != nil {
		t.Fatal(err)
	}
	db := d.DB()
	return &handlerEnv[*sql.Tx]{driver: d, handler: h,
		query: func(q string, dest ...any) error { return db.QueryRowContext(ctx, q).Scan(dest...) },
		rows: func(q string) ([]string, error) {
			rows, err := db.QueryContext(ctx, q)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					return nil, err
				}
				out = append(out, s)
			}
			return out, rows.Err()
		}}
}

func TestHandlerPostgreSQL(t *testing.T) {
	t.Parallel()
	env := pgEnv(t)
	t.Run("one invoice", func(t *testing.T) { testOneInvoice(t, env) })
	t.Run("rollback", func(t *testing.T) { testRollback(t, env, true) })
	t.Run("concurrent", func(t *testing.T) { testConcurrent(t, env) })
}

func TestHandlerSQLite(t *testing.T) {
	t.Parallel()
	env := sqliteEnv(t)
	t.Run("one invoice", func(t *testing.T) { testOneInvoice(t, env) })
	t.Run("rollback", func(t *testing.T) { testRollback(t, env, false) })
	t.Run("concurrent", func(t *testing.T) { testConcurrent(t, env) })
}

func eventMessage(t *testing.T, id string, ev *InvoiceIssued) *txinbox.Message {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return &txinbox.Message{ID: id, Payload: b}
}

func process[TTx any](t *testing.T, p *txinbox.Processor[TTx], msgs ...*txinbox.Message) []txinbox.Result {
	t.Helper()
	res, err := p.Process(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func newProcessor[TTx any](t *testing.T, env *handlerEnv[TTx], h txinbox.HandlerFunc[TTx]) *txinbox.Processor[TTx] {
	t.Helper()
	p, err := txinbox.NewProcessor(env.driver, txinbox.Config[TTx]{Scope: DefaultScope, Handler: h, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testOneInvoice: one event, delivered three times (twice in one batch),
// gives one partner_invoices row and one outbox row whose payload is the
// INVOIC with the row's control reference.
func testOneInvoice[TTx any](t *testing.T, env *handlerEnv[TTx]) {
	p := newProcessor(t, env, env.handler)
	m := eventMessage(t, "InvoiceIssued/one", testEvent("INV-ONE"))
	res := process(t, p, m, m)
	res = append(res, process(t, p, m)...)
	want := []txinbox.Outcome{txinbox.Processed, txinbox.Duplicate, txinbox.Duplicate}
	for i, r := range res {
		if r.Outcome != want[i] {
			t.Fatalf("outcome %d = %v (%v), want %v", i, r.Outcome, r.Err, want[i])
		}
	}
	var n int
	var ref, partner string
	if err := env.query(`SELECT count(*), min(unb_ref), min(partner) FROM partner_invoices WHERE message_id = 'InvoiceIssued/one'`, &n, &ref, &partner); err != nil {
		t.Fatal(err)
	}
	if n != 1 || ref == "" || partner != "ACME" {
		t.Fatalf("partner_invoices: %d rows, ref %q, partner %q", n, ref, partner)
	}
	var rows int
	var scope, topic, ctype string
	var payload []byte
	if err := env.query(`SELECT count(*) FROM txinbox_outbox WHERE message_id = 'InvoiceIssued/one'`, &rows); err != nil {
		t.Fatal(err)
	}
	if err := env.query(`SELECT scope, topic, content_type, payload FROM txinbox_outbox WHERE message_id = 'InvoiceIssued/one'`,
		&scope, &topic, &ctype, &payload); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || scope != DefaultScope || topic != "ACME" || ctype != ContentType {
		t.Fatalf("outbox: %d rows, scope %q topic %q content type %q", rows, scope, topic, ctype)
	}
	ics, err := edifact.Parse(bytesReader(payload))
	if err != nil || len(ics) != 1 || ics[0].ControlRef != ref || ics[0].Recipient.ID != testRecipient.ID {
		t.Fatalf("outbox payload: %v %+v, want control reference %s", err, ics, ref)
	}
}

// testRollback: a handler that fails after the invoicer ran leaves no
// partner_invoices row and no outbox row; the next invoice gets a fresh
// reference (PostgreSQL may skip the one the rollback drew).
func testRollback[TTx any](t *testing.T, env *handlerEnv[TTx], mayGap bool) {
	var b int64
	if err := env.query(`SELECT coalesce(max(CAST(unb_ref AS integer)), 0) FROM partner_invoices`, &b); err != nil {
		t.Fatal(err)
	}
	failing := newProcessor(t, env, func(ctx context.Context, tx TTx, m *txinbox.Message) error {
		if err := env.handler(ctx, tx, m); err != nil {
			return err
		}
		return txinbox.Permanent(errors.New("the business says no after the INVOIC was built"))
	})
	m := eventMessage(t, "InvoiceIssued/rollback", testEvent("INV-RB"))
	if r := process(t, failing, m); r[0].Outcome != txinbox.DeadLettered {
		t.Fatalf("outcome %v, want DeadLettered", r[0].Outcome)
	}
	var pi, ob int
	if err := env.query(`SELECT (SELECT count(*) FROM partner_invoices WHERE message_id = 'InvoiceIssued/rollback'),
		(SELECT count(*) FROM txinbox_outbox WHERE message_id = 'InvoiceIssued/rollback')`, &pi, &ob); err != nil {
		t.Fatal(err)
	}
	if pi != 0 || ob != 0 {
		t.Fatalf("rolled back invoice left %d partner_invoices and %d outbox rows", pi, ob)
	}
	p := newProcessor(t, env, env.handler)
	process(t, p, eventMessage(t, "InvoiceIssued/after", testEvent("INV-AFTER")))
	var ref string
	if err := env.query(`SELECT unb_ref FROM partner_invoices WHERE message_id = 'InvoiceIssued/after'`, &ref); err != nil {
		t.Fatal(err)
	}
	r, err := strconv.ParseInt(ref, 10, 64)
	if err != nil {
		t.Fatalf("control reference %q: %v", ref, err)
	}
	switch {
	case mayGap && (r != b+1 && r != b+2):
		t.Errorf("after a rollback the reference went from %d to %d, want %d or %d", b, r, b+1, b+2)
	case !mayGap && r != b+1:
		t.Errorf("after a rollback the SQLite counter went from %d to %d, want %d", b, r, b+1)
	}
}

// testConcurrent: 8 goroutines, each with its own processor, process 25
// events each (and each other's, as duplicates): every invoice has one row
// and no control reference is used twice.
func testConcurrent[TTx any](t *testing.T, env *handlerEnv[TTx]) {
	const workers, per = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := txinbox.NewProcessor(env.driver, txinbox.Config[TTx]{Scope: DefaultScope, Handler: env.handler, Logger: quiet})
			if err != nil {
				errs <- err
				return
			}
			for i := range per {
				var msgs []*txinbox.Message
				for _, k := range []int{w, (w + 1) % workers} { // own event, and a neighbour's
					b, _ := json.Marshal(testEvent(fmt.Sprintf("INV-C-%d-%d", k, i)))
					msgs = append(msgs, &txinbox.Message{ID: fmt.Sprintf("InvoiceIssued/c/%d/%d", k, i), Payload: b})
				}
				res, err := p.Process(context.Background(), msgs)
				if err == nil {
					for _, r := range res {
						if !r.Outcome.Ack() {
							err = fmt.Errorf("outcome %v: %v", r.Outcome, r.Err)
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	refs, err := env.rows(`SELECT unb_ref FROM partner_invoices WHERE message_id LIKE 'InvoiceIssued/c/%'`)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range refs {
		if seen[r] {
			t.Errorf("control reference %s used twice", r)
		}
		seen[r] = true
	}
	ids, err := env.rows(`SELECT DISTINCT message_id FROM txinbox_outbox WHERE message_id LIKE 'InvoiceIssued/c/%'`)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != workers*per || len(ids) != workers*per {
		t.Errorf("%d partner_invoices rows and %d outbox messages, want %d each", len(refs), len(ids), workers*per)
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// schemaPool returns a pool on a fresh schema of the database at
// $TXINBOX_TEST_DATABASE_URL (default: the server .ci/start-postgres
// starts; go run ./internal/cmd/testall sets it), dropped at cleanup. It
// skips when no server answers, except under TXINBOX_REQUIRE_DB=1.
func schemaPool(t *testing.T) *pgxpool.Pool {
	url := cmp.Or(os.Getenv("TXINBOX_TEST_DATABASE_URL"), "postgres://postgres@127.0.0.1:54329/postgres?sslmode=disable")
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, url)
	if err == nil {
		err = admin.Ping(ctx)
	}
	if err != nil {
		if os.Getenv("TXINBOX_REQUIRE_DB") == "1" {
			t.Fatalf("PostgreSQL at %s: %v", url, err)
		}
		t.Skipf("no PostgreSQL at %s (set TXINBOX_TEST_DATABASE_URL): %v", url, err)
	}
	t.Cleanup(admin.Close)
	schema := fmt.Sprintf("t_invoicer_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") }) //nolint:errcheck // best effort
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
