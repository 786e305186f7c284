package effect_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/effect"
	"github.com/txinbox/txinbox/internal/testkit/sqlitetest"
	"github.com/txinbox/txinbox/store"
)

// TestValidate: a spec's errors are serve's, naming its flags.
func TestValidate(t *testing.T) {
	for _, c := range []struct {
		spec effect.Spec
		want string
	}{
		{effect.Spec{Mode: effect.None}, ""},
		{effect.Spec{Mode: effect.Outbox, OutboxTable: "outbox"}, ""},
		{effect.Spec{Mode: effect.SQL, Statements: []string{"DELETE FROM t"}}, ""},
		{effect.Spec{Mode: effect.Outbox, Statements: []string{"DELETE FROM t"}}, "--effect-sql needs --effect sql (it is outbox)"},
		{effect.Spec{Mode: effect.SQL}, "--effect sql needs at least one --effect-sql statement (parameters: AS4: $1 scope,"},
		{effect.Spec{Mode: effect.SQL, Statements: []string{"SELECT $1", "INSERT INTO t VALUES ($2, $11)"}},
			"--effect-sql statement 2 names $11: the parameters are $1 to $10"},
		{effect.Spec{Mode: "mail"}, `--effect "mail": use none, outbox or sql`},
		{effect.Spec{}, `--effect "": use none, outbox or sql`},
	} {
		err := c.spec.Validate()
		if (err == nil) != (c.want == "") || err != nil && !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
}

// TestSetBasedNeedsAJoiningStore: statements that read new_messages run
// only joined to the claim; on SQLite, Check refuses them and Apply falls
// back to a handler.
func TestSetBasedNeedsAJoiningStore(t *testing.T) {
	ctx := context.Background()
	d := sqlitetest.Open(t)
	eff, err := effect.New(ctx, d, effect.Spec{Mode: effect.SQL, Statements: []string{"INSERT INTO t SELECT message_id FROM new_messages"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := eff.Check(ctx); !errors.Is(err, effect.ErrNotJoined) {
		t.Errorf("Check = %v, want ErrNotJoined", err)
	}
	if cfg := eff.Apply(txinbox.Config[*sql.Tx]{Scope: "s"}, "kafka"); eff.Joined() || cfg.Effect != nil || cfg.Handler == nil {
		t.Errorf("Apply on SQLite: joined %v, Effect %v, Handler set %v; want a handler", eff.Joined(), cfg.Effect, cfg.Handler != nil)
	}
}

// TestCheckPreparesEachStatement: Check names the statement that does not
// prepare.
func TestCheckPreparesEachStatement(t *testing.T) {
	ctx := context.Background()
	d := sqlitetest.Open(t)
	eff, err := effect.New(ctx, d, effect.Spec{Mode: effect.SQL, Statements: []string{"SELECT $1", "INSERT INTO nowhere VALUES ($1)"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := eff.Check(ctx); err == nil || !strings.HasPrefix(err.Error(), "--effect-sql statement 2: ") {
		t.Errorf("Check = %v, want statement 2's error", err)
	}
}

// TestBrokerParams: a broker message's statement gets the parameters in
// the order effect.Params documents, as many as it names.
func TestBrokerParams(t *testing.T) {
	ctx := context.Background()
	d := sqlitetest.Open(t)
	if _, err := d.DB().ExecContext(ctx, "CREATE TABLE got (a, b, c, d, e, f, g, h, i, j); CREATE TABLE few (a, b)"); err != nil {
		t.Fatal(err)
	}
	eff, err := effect.New(ctx, d, effect.Spec{Mode: effect.SQL, Statements: []string{
		"INSERT INTO got VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", "INSERT INTO few VALUES ($1, $2)"}})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	p, err := txinbox.NewProcessor(d, eff.Apply(txinbox.Config[*sql.Tx]{Scope: "s", Now: func() time.Time { return at }}, "kafka"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	m := &txinbox.Message{ID: "m1", Source: "invoices", PartitionKey: "pk", SourcePosition: "3:7", Payload: []byte("body"),
		Headers: []txinbox.Header{{Key: "k", Value: "v"}}, ReceivedAt: at}
	if res, err := p.Process(ctx, []*txinbox.Message{m}); err != nil || res[0].Outcome != txinbox.Processed {
		t.Fatalf("Process = %v, %v", res, err)
	}
	var got [10]string
	row := d.DB().QueryRowContext(ctx, "SELECT a, b, c, d, e, f, g, h, CAST(i AS TEXT), j FROM got")
	if err := row.Scan(&got[0], &got[1], &got[2], &got[3], &got[4], &got[5], &got[6], &got[7], &got[8], &got[9]); err != nil {
		t.Fatal(err)
	}
	want := [9]string{"s", "m1", "m1", "kafka", "invoices", "pk", "3:7", `[{"key":"k","value":"v"}]`, "body"}
	if [9]string(got[:9]) != want || !strings.HasPrefix(got[9], "2025-01-02") {
		t.Errorf("parameters %q; want %q and the time received", got, want)
	}
	var n int
	if err := d.DB().QueryRowContext(ctx, "SELECT count(*) FROM few WHERE a = 's' AND b = 'm1'").Scan(&n); err != nil || n != 1 {
		t.Errorf("the two-parameter statement wrote %d rows (%v), want 1", n, err)
	}
}

// noExecDriver is a store whose transactions are neither *sql.Tx nor run
// by a store.StatementRunner.
type noExecDriver struct{ store.Driver[struct{}] }

// TestNewNeedsAWayToRunStatements: a store on which statements cannot run
// is refused at New, unless the effect runs none.
func TestNewNeedsAWayToRunStatements(t *testing.T) {
	ctx := context.Background()
	if _, err := effect.New[struct{}](ctx, noExecDriver{}, effect.Spec{Mode: effect.SQL, Statements: []string{"SELECT 1"}}); err == nil {
		t.Error("New on a store that runs no statements: no error")
	}
	if _, err := effect.New[struct{}](ctx, noExecDriver{}, effect.Spec{Mode: effect.None}); err != nil {
		t.Errorf("New with None: %v", err)
	}
	if _, err := effect.New(ctx, sqlitetest.Open(t), effect.Spec{Mode: effect.Outbox}); err == nil {
		t.Error("New with Outbox and no OutboxTable: no error")
	}
}
