package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store/pgstore"
)

// slowCommitDDL is an effects table whose rows are checked at COMMIT by
// a deferred constraint trigger that sleeps: the COMMIT itself runs on
// the server for half a second (the only sleep of the test's sessions).
// The trigger swallows a cancel (pgx sends one when a context ends
// during a statement, then closes the connection) and sleeps on, as a
// COMMIT past its point of no return does: its commit record written,
// waiting for the WAL flush or a synchronous standby, it commits (with a
// warning at most) whatever the client does meanwhile.
const slowCommitDDL = `
CREATE TABLE effects (message_id text PRIMARY KEY);
CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    PERFORM pg_sleep(0.5);
  EXCEPTION WHEN query_canceled THEN
    PERFORM pg_sleep(0.5);
  END;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON effects
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit();`

// TestStopDuringCommitThenTruncate stops a consumer (cancels the context
// of Process) while its batch's COMMIT runs on the server, then, as soon
// as Process returned, reads and truncates the tables, as a test or an
// operator does after stopping a consumer. What Process reported must be
// what the database holds (committed ⇔ reported Processed), the server
// must have finished the transaction (no session of the processor still
// active, the TRUNCATE not waiting on its locks), and nothing may land
// after the TRUNCATE. Each way a batch commits: a handler's transaction
// (COMMIT), statements queued with the COMMIT, offsets as the inbox (the
// checkpoint's transaction) and a declarative effect (one autocommitted
// statement).
func TestStopDuringCommitThenTruncate(t *testing.T) {
	c := newClaimEnv(t)
	const app = "stop-during-commit"
	d := c.driver(app, nil)
	if _, err := d.Pool().Exec(c.ctx, slowCommitDDL); err != nil {
		t.Fatal(err)
	}
	for _, tc := range commitWays() {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Scope, cfg.Logger = tc.name, slog.New(slog.NewTextHandler(io.Discard, nil))
			p, err := txinbox.NewProcessor(d, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(c.ctx)
			stop, watched := make(chan struct{}), make(chan error, 1)
			go func() { watched <- cancelInCommit(c.admin, app, cancel, stop) }()
			res, err := tc.run(p, ctx, &txinbox.Message{ID: tc.name, Payload: []byte("x")})
			at := stopped{active: activeSessions(t, c.admin, app), committed: effects(t, c, tc.name) == 1,
				reported: err == nil && res[0].Outcome == txinbox.Processed}
			close(stop)
			if werr := <-watched; werr != nil {
				t.Fatal(werr)
			}
			at.truncErr = truncateAtOnce(c, "effects", "txinbox_inbox", "txinbox_checkpoints")
			waitIdle(t, c.admin, app)
			at.late = effects(t, c, tc.name)
			at.check(t, fmt.Sprint(res, ", ", err))
		})
	}
}

// commitWay is one way a batch commits.
type commitWay struct {
	name string
	cfg  txinbox.Config[pgx.Tx]
	run  func(p *txinbox.Processor[pgx.Tx], ctx context.Context, m *txinbox.Message) ([]txinbox.Result, error)
}

// commitWays: a handler's transaction (COMMIT), statements queued with
// the COMMIT, offsets as the inbox (the checkpoint's transaction) and a
// declarative effect (one autocommitted statement).
func commitWays() []commitWay {
	insert := func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
		_, err := tx.Exec(ctx, "INSERT INTO effects VALUES ($1)", m.ID)
		return err
	}
	queue := func(_ context.Context, tx pgx.Tx, m *txinbox.Message) error {
		return pgstore.Queue(tx, "INSERT INTO effects VALUES ($1)", m.ID)
	}
	offsets := func(p *txinbox.Processor[pgx.Tx], ctx context.Context, m *txinbox.Message) ([]txinbox.Result, error) {
		res, _, err := p.ProcessOffsets(ctx, []*txinbox.Message{m},
			txinbox.OffsetCheckpoint{Checkpoint: txinbox.Checkpoint{Source: "t", Partition: 0, Positions: []int64{0}}, Saved: -1})
		return res, err
	}
	return []commitWay{
		{name: "handler", cfg: txinbox.Config[pgx.Tx]{Handler: insert}, run: process},
		{name: "queued", cfg: txinbox.Config[pgx.Tx]{Handler: queue}, run: process},
		{name: "offsets", cfg: txinbox.Config[pgx.Tx]{Handler: insert}, run: offsets},
		{name: "declarative", run: process, cfg: txinbox.Config[pgx.Tx]{
			Effect: &txinbox.Effect{Statements: []string{"INSERT INTO effects SELECT message_id FROM new_messages"}}}},
	}
}

// stopped is what the database held once Process returned, and after.
type stopped struct {
	active              int   // sessions of the processor running a statement at the return
	committed, reported bool  // the effect at the return; Process reported Processed
	truncErr            error // of the TRUNCATE right after the return
	late                int   // the effect's rows once the server was idle, after the TRUNCATE
}

func (s stopped) check(t *testing.T, process string) {
	t.Helper()
	if s.active != 0 {
		t.Errorf("Process returned (%s) while %d session(s) of the processor still ran on the server", process, s.active)
	}
	if s.committed != s.reported {
		t.Errorf("Process reported %s; the database held the effect: %v", process, s.committed)
	}
	if !s.reported {
		t.Errorf("Process: %s; want Processed: the COMMIT was sent before the cancel, and it is awaited", process)
	}
	if s.truncErr != nil {
		t.Errorf("TRUNCATE right after Process returned: %v", s.truncErr)
	}
	if s.late != 0 {
		t.Errorf("the effect landed after Process returned and the tables were truncated")
	}
}

func process(p *txinbox.Processor[pgx.Tx], ctx context.Context, m *txinbox.Message) ([]txinbox.Result, error) {
	return p.Process(ctx, []*txinbox.Message{m})
}

// cancelInCommit calls cancel once a session named app sleeps, that is
// runs its COMMIT's deferred trigger (slowCommitDDL). It gives up when
// stop closes.
func cancelInCommit(admin *pgxpool.Pool, app string, cancel context.CancelFunc, stop <-chan struct{}) error {
	defer cancel()
	for {
		var n int
		err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND state = 'active' AND wait_event = 'PgSleep'`, app).Scan(&n)
		if err != nil || n > 0 {
			return err
		}
		select {
		case <-stop:
			return errors.New("Process returned before its COMMIT was seen running")
		case <-time.After(5 * time.Millisecond): // polling the server's view of the commit
		}
	}
}

// activeSessions counts the sessions named app that run a statement.
func activeSessions(t *testing.T, admin *pgxpool.Pool, app string) (n int) {
	t.Helper()
	err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE application_name = $1 AND state <> 'idle'`, app).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitIdle waits until no session named app runs a statement (a COMMIT
// whose client left runs to its end), so that anything late has landed.
func waitIdle(t *testing.T, admin *pgxpool.Pool, app string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); activeSessions(t, admin, app) > 0; {
		if time.Now().After(deadline) {
			t.Fatal("the processor's sessions still run after 20 s")
		}
		time.Sleep(10 * time.Millisecond) // polling pg_stat_activity
	}
}

// effects counts the effects of message id.
func effects(t *testing.T, c *claimEnv, id string) (n int) {
	t.Helper()
	err := c.admin.QueryRow(c.ctx, "SELECT count(*) FROM "+c.schema+".effects WHERE message_id = $1", id).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// truncateAtOnce truncates tables of c's schema, failing if a lock held
// by a transaction still in flight makes it wait.
func truncateAtOnce(c *claimEnv, tables ...string) error {
	tx, err := c.admin.Begin(c.ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(c.ctx) //nolint:errcheck // no-op after Commit
	if _, err := tx.Exec(c.ctx, "SET LOCAL lock_timeout = '200ms'"); err != nil {
		return err
	}
	for _, table := range tables {
		if _, err := tx.Exec(c.ctx, fmt.Sprintf("TRUNCATE %s.%s", c.schema, table)); err != nil {
			return err
		}
	}
	return tx.Commit(c.ctx)
}
