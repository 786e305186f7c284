package mysqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// effectDriver is a migrated driver on a database of its own, after ddl.
func effectDriver(t *testing.T, ddl ...string) (*mysqlstore.Driver, context.Context) {
	t.Helper()
	ctx := context.Background()
	db := mysqltest.Open(t, mysqltest.NewDatabase(t), 8)
	for _, q := range ddl {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	d, err := mysqlstore.New(db, mysqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return d, ctx
}

// column reads the first column of query's rows as text.
func column(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDeclarativeEffect: an effect given as SQL runs in the claim's
// transaction over the batch's new messages, once each: duplicates,
// drift and dead letters run nothing, a message the effect's table
// refuses (a CHECK constraint) fails alone (the batch is split down to
// it), payload and headers reach the statement, and a checkpoint commits
// with it. CheckEffect names an unknown table before the first batch.
func TestDeclarativeEffect(t *testing.T) {
	d, ctx := effectDriver(t, `CREATE TABLE effects (scope VARCHAR(100) NOT NULL, message_id VARCHAR(100) NOT NULL CHECK (message_id <> 'poison'),
		body BLOB, kind VARCHAR(20), received DATETIME(6)) ENGINE=InnoDB`)
	stmt := "INSERT INTO effects SELECT nm.scope, nm.message_id, nm.payload, JSON_VALUE(nm.headers, '$[0].value'), nm.received_at FROM new_messages nm"
	if err := d.CheckEffect(ctx, []string{stmt}); err != nil {
		t.Fatal(err)
	}
	if err := d.CheckEffect(ctx, []string{"INSERT INTO no_such_table SELECT * FROM new_messages"}); err == nil ||
		!strings.Contains(err.Error(), "no_such_table") {
		t.Errorf("CheckEffect of an unknown table: %v", err)
	}
	p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: "s", MaxAttempts: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Effect: &txinbox.Effect{Statements: []string{stmt}, Headers: func(m *txinbox.Message) (string, error) {
			if len(m.Headers) == 0 {
				return "", errors.New("no headers")
			}
			return `[{"key":"kind","value":"` + m.Headers[0].Value + `"}]`, nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	m := func(id, body string) *txinbox.Message {
		return &txinbox.Message{ID: id, Payload: []byte(body), Headers: []txinbox.Header{{Key: "kind", Value: "invoice"}}}
	}
	process := func(msgs ...*txinbox.Message) []txinbox.Outcome {
		t.Helper()
		res, err := p.Process(ctx, msgs)
		if err != nil {
			t.Fatal(err)
		}
		var out []txinbox.Outcome
		for _, r := range res {
			out = append(out, r.Outcome)
		}
		return out
	}
	noHeaders := &txinbox.Message{ID: "bare", Payload: []byte("x")}
	got := process(m("a", "A"), m("b", "B"), m("poison", "P"), m("c", "C"), noHeaders)
	want := []txinbox.Outcome{txinbox.Processed, txinbox.Processed, txinbox.DeadLettered, txinbox.Processed, txinbox.DeadLettered}
	if !slices.Equal(got, want) {
		t.Errorf("first batch: %v, want %v", got, want)
	}
	got = process(m("a", "A"), m("b", "other"), m("d", "D"), m("poison", "P"))
	want = []txinbox.Outcome{txinbox.Duplicate, txinbox.Drift, txinbox.Processed, txinbox.DeadLettered}
	if !slices.Equal(got, want) {
		t.Errorf("second batch: %v, want %v", got, want)
	}
	if _, err := p.ProcessCheckpoint(ctx, []*txinbox.Message{m("e", "E")}, txinbox.Checkpoint{Source: "t", Partition: 0, Positions: []int64{6}}); err != nil {
		t.Fatal(err)
	}
	if cps, err := p.Checkpoints(ctx, "t"); err != nil || cps[0] != 6 {
		t.Errorf("checkpoints %v, %v; want partition 0 at 6", cps, err)
	}
	effects := column(t, d.DB(), "SELECT CONCAT(message_id, ':', body, ':', kind, ':', received IS NOT NULL) FROM effects ORDER BY 1")
	if strings.Join(effects, " ") != "a:A:invoice:1 b:B:invoice:1 c:C:invoice:1 d:D:invoice:1 e:E:invoice:1" {
		t.Errorf("effects %v", effects)
	}
}

// TestDeclarativeEffectManyStatements: every statement runs over the new
// messages of a batch larger than a statement takes (1,000), each new
// message once, whether it reads them from the inbox (no payload, headers
// or * named) or from parameters; a statement may name new_messages twice,
// as a table and as a column's qualifier, and quoted.
func TestDeclarativeEffectManyStatements(t *testing.T) {
	d, ctx := effectDriver(t,
		"CREATE TABLE a (n INT AUTO_INCREMENT PRIMARY KEY, message_id VARCHAR(100) NOT NULL) ENGINE=InnoDB",
		"CREATE TABLE counts (k INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB",
		"INSERT INTO counts VALUES (1, 0)")
	statements := []string{
		"INSERT INTO a (message_id) SELECT new_messages.message_id FROM `new_messages`",
		"UPDATE counts SET n = n + (SELECT COUNT(*) FROM new_messages WHERE message_id NOT IN (SELECT message_id FROM new_messages AS o WHERE o.message_id = ''))",
	}
	if err := d.CheckEffect(ctx, statements); err != nil {
		t.Fatal(err)
	}
	p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: "s", MaxBatchSize: 2500,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Effect: &txinbox.Effect{Statements: statements}})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*txinbox.Message
	for i := range 2500 {
		id := string(rune('a'+i%26)) + strings.Repeat("x", i%7) + "-" + string(rune('0'+i/1000)) + string(rune('0'+i/100%10)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
		msgs = append(msgs, &txinbox.Message{ID: id, Payload: []byte("p")})
	}
	if _, err := p.Process(ctx, msgs[:1000]); err != nil {
		t.Fatal(err)
	}
	res, err := p.Process(ctx, msgs) // 1,000 duplicates, 1,500 new
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if want := map[bool]txinbox.Outcome{true: txinbox.Duplicate, false: txinbox.Processed}[i < 1000]; r.Outcome != want {
			t.Fatalf("%s: %v, want %v", msgs[i].ID, r.Outcome, want)
		}
	}
	ids := column(t, d.DB(), "SELECT message_id FROM a")
	var want []string
	for _, m := range msgs {
		want = append(want, m.ID)
	}
	slices.Sort(ids)
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("effects: %d rows, want %d, once each", len(ids), len(want))
	}
	if n := column(t, d.DB(), "SELECT n FROM counts"); len(n) != 1 || n[0] != "2500" {
		t.Errorf("count %v, want 2500", n)
	}
}

// TestEffectHeadersOnlyWhenRead: Config.Effect.Headers runs only for
// statements whose text reads new_messages' payload or headers. A header
// it refuses then dead-letters its message; with statements that do not
// read them it fails nothing.
func TestEffectHeadersOnlyWhenRead(t *testing.T) {
	d, ctx := effectDriver(t, "CREATE TABLE effects (message_id VARCHAR(100) NOT NULL) ENGINE=InnoDB",
		"CREATE TABLE docs (message_id VARCHAR(100), headers TEXT) ENGINE=InnoDB")
	for _, c := range []struct {
		name, statement string
		reads           bool
	}{
		{"unread", "INSERT INTO effects SELECT message_id FROM new_messages", false},
		{"read", "INSERT INTO docs SELECT message_id, headers FROM new_messages", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls int
			p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: c.name, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Effect: &txinbox.Effect{Statements: []string{c.statement}, Headers: func(m *txinbox.Message) (string, error) {
					calls++
					if m.Header("h") == "bad" {
						return "", errors.New("refused header")
					}
					return `[{"key":"h","value":"` + m.Header("h") + `"}]`, nil
				}}})
			if err != nil {
				t.Fatal(err)
			}
			var msgs []*txinbox.Message
			for _, h := range []string{"ok", "bad", "fine"} {
				msgs = append(msgs, &txinbox.Message{ID: c.name + "-" + h, Payload: []byte(h), Headers: []txinbox.Header{{Key: "h", Value: h}}})
			}
			res, err := p.Process(ctx, msgs)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				want := txinbox.Processed
				if c.reads && msgs[i].Header("h") == "bad" {
					want = txinbox.DeadLettered
				}
				if r.Outcome != want {
					t.Errorf("%s: %v (%v), want %v", msgs[i].ID, r.Outcome, r.Err, want)
				}
			}
			if want := map[bool]int{false: 0, true: 3}[c.reads]; calls != want {
				t.Errorf("Headers called %d times, want %d", calls, want)
			}
		})
	}
	if docs := column(t, d.DB(), "SELECT CONCAT(message_id, ' ', JSON_VALUE(headers, '$[0].value')) FROM docs ORDER BY 1"); strings.Join(docs, ",") != "read-fine fine,read-ok ok" {
		t.Errorf("docs %v", docs)
	}
	if effects := column(t, d.DB(), "SELECT message_id FROM effects ORDER BY 1"); strings.Join(effects, ",") != "unread-bad,unread-fine,unread-ok" {
		t.Errorf("effects %v", effects)
	}
}
