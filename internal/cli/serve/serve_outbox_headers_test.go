package serve_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/effect"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/store"
)

// headersTarget records the headers each outbox row was sent with.
type headersTarget struct {
	mu   sync.Mutex
	sent map[string][]outbox.Header
}

func (h *headersTarget) Send(_ context.Context, m *outbox.Message) (outbox.Receipt, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sent[m.MessageID] = m.Headers
	return nil, nil
}

// TestOutboxEffectWithoutHeadersStoresNull: serve's --effect outbox
// stores NULL, not "[]", for a message without headers (per message on
// SQLite and PostgreSQL, in the claim's statement on PostgreSQL), and the
// relay sends that row with no headers and the other with its own.
func TestOutboxEffectWithoutHeadersStoresNull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db := openInbox(t, clikit.DBFlags{URL: filepath.Join(t.TempDir(), "inbox.db")})
		outboxHeadersRoundTrip[*sql.Tx](t, ctx, db, db.Lite, false)
	})
	t.Run("mysql joined", func(t *testing.T) {
		t.Parallel()
		db := openInbox(t, clikit.DBFlags{URL: mysqltest.NewDatabase(t)})
		outboxHeadersRoundTrip[*sql.Tx](t, ctx, db, db.My, true)
	})
	for _, join := range []bool{false, true} {
		name := map[bool]string{false: "postgres per message", true: "postgres joined"}[join]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool := testdb.Require(t)
			db := openInbox(t, clikit.DBFlags{URL: testdb.URL(), Schema: testdb.NewSchema(t, pool)})
			outboxHeadersRoundTrip[pgx.Tx](t, ctx, db, db.PG, join)
		})
	}
}

func openInbox(t *testing.T, f clikit.DBFlags) *clikit.InboxDB {
	t.Helper()
	db, err := clikit.OpenDB(context.Background(), f, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Admin.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

func outboxHeadersRoundTrip[TTx any](t *testing.T, ctx context.Context, db *clikit.InboxDB, d store.Driver[TTx], join bool) {
	eff, err := effect.New(ctx, d, effect.Spec{Mode: effect.Outbox, OutboxTable: db.OutboxTable(), OutboxHeaders: true, MySQL: db.Kind == "mysql"})
	if err != nil {
		t.Fatal(err)
	}
	// Per message: the handler a store that cannot join it gets.
	cfg := txinbox.Config[TTx]{Scope: "s", Handler: eff.Handler("kafka")}
	if join {
		if cfg = eff.Apply(txinbox.Config[TTx]{Scope: "s"}, "kafka"); cfg.Effect == nil {
			t.Fatal("the outbox effect is not joined to the claim")
		}
	}
	p, err := txinbox.NewProcessor(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	with := []txinbox.Header{{Key: "content-type", Value: "text/plain"}, {Key: "x", Value: "1"}}
	if _, err := p.Process(ctx, []*txinbox.Message{{ID: "bare", Payload: []byte("a")}, {ID: "with", Payload: []byte("b"), Headers: with}}); err != nil {
		t.Fatal(err)
	}
	var nulls int
	if err := db.Query(ctx, `SELECT count(*) FROM `+db.OutboxTable()+` WHERE headers IS NULL AND message_id = 'bare'`, nil,
		[]any{&nulls}, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if nulls != 1 {
		t.Errorf("the outbox row of a message without headers has a headers value, want NULL")
	}
	var types string
	if db.Kind == "sqlite" {
		types = ",text/plain" // read through the relay only
	} else if err := db.Query(ctx, `SELECT `+map[bool]string{true: "group_concat(content_type ORDER BY message_id)", false: "string_agg(content_type, ',' ORDER BY message_id)"}[db.Kind == "mysql"]+
		` FROM `+db.OutboxTable(), nil, []any{&types}, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if types != ",text/plain" {
		t.Errorf("content types %q, want none for bare and text/plain for with", types)
	}
	target := &headersTarget{sent: map[string][]outbox.Header{}}
	r, err := outbox.New(db.OutboxStore(), outbox.Config{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.RunOnce(ctx); err != nil || n != 2 {
		t.Fatalf("relay RunOnce = %d, %v; want 2 sent", n, err)
	}
	if h, ok := target.sent["bare"]; !ok || len(h) != 0 {
		t.Errorf("bare sent with headers %v (sent: %v), want none", h, ok)
	}
	if h := target.sent["with"]; !slices.Equal(h, with) {
		t.Errorf("with sent with headers %v, want %v", h, with)
	}
}

// TestEffectSQLHeadersRefusedOnlyWhenRead: through serve's --effect sql
// wiring (its header encoding, joined to the claim on PostgreSQL), a
// message whose header key holds a NUL is processed when the statements
// never read the headers, and dead-lettered, alone, when they do.
func TestEffectSQLHeadersRefusedOnlyWhenRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.Require(t)
	schema := testdb.NewSchema(t, pool)
	db := openInbox(t, clikit.DBFlags{URL: testdb.URL(), Schema: schema})
	keysTable, docsTable := schema+".keys", schema+".docs"
	if _, err := db.PG.Pool().Exec(ctx, `CREATE TABLE `+keysTable+` (message_id text); CREATE TABLE `+docsTable+` (message_id text, headers jsonb)`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		statement string
		reads     bool
	}{
		{"INSERT INTO " + keysTable + " SELECT message_id FROM new_messages", false},
		{"INSERT INTO " + docsTable + " SELECT message_id, headers FROM new_messages", true},
	} {
		eff, err := effect.New(ctx, db.PG, effect.Spec{Mode: effect.SQL, Statements: []string{c.statement}})
		if err != nil || !eff.Joined() {
			t.Fatalf("effect.New: %v (joined %v)", err, err == nil && eff.Joined())
		}
		p, err := txinbox.NewProcessor(db.PG, eff.Apply(txinbox.Config[pgx.Tx]{Scope: c.statement, MaxAttempts: 1}, "kafka"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Process(ctx, []*txinbox.Message{
			{ID: "good", Payload: []byte("a"), Headers: []txinbox.Header{{Key: "k", Value: "v"}}},
			{ID: "nul", Payload: []byte("b"), Headers: []txinbox.Header{{Key: "k\x00", Value: "v"}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]txinbox.Outcome{false: txinbox.Processed, true: txinbox.DeadLettered}[c.reads]
		if res[0].Outcome != txinbox.Processed || res[1].Outcome != want {
			t.Errorf("%s: outcomes %v (%v), %v (%v); want processed, %v", c.statement, res[0].Outcome, res[0].Err, res[1].Outcome, res[1].Err, want)
		}
	}
	var keys, docs int
	if err := db.PG.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM `+keysTable+`), (SELECT count(*) FROM `+docsTable+` WHERE headers->0->>'value' = 'v')`).Scan(&keys, &docs); err != nil ||
		keys != 2 || docs != 1 {
		t.Errorf("keys %d, docs %d (%v); want 2 and 1", keys, docs, err)
	}
}
