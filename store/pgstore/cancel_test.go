package pgstore_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store/pgstore"
)

// TestCommitAwaitedAfterCancel: a batch whose commit is on its way when
// the caller's context ends is awaited, so that Process returns with what
// the database did: the batch commits, and nothing lands after Process
// returned. The commit is slowed by a statement sent with it (pg_sleep).
// Before, Process returned "context canceled" at once: here pgx's cancel
// stopped the sleep and the batch rolled back, but a COMMIT that the
// server has begun is not stopped by it and landed after Process returned
// (the bench's Kafka slices met that). A context that ended before the
// commit was sent still sends nothing.
func TestCommitAwaitedAfterCancel(t *testing.T) {
	d, ctx := driverWithEffects(t, `CREATE TABLE effects (message_id text NOT NULL)`)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	queued, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "queued", Logger: logger,
		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			if err := pgstore.Queue(tx, "INSERT INTO effects VALUES ($1)", m.ID); err != nil {
				return err
			}
			return pgstore.Queue(tx, "SELECT pg_sleep(0.5017)")
		}})
	if err != nil {
		t.Fatal(err)
	}
	declarative, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "declarative", Logger: logger,
		Effect: &txinbox.Effect{Statements: []string{"INSERT INTO effects SELECT message_id FROM new_messages, pg_sleep(0.5017)"}}})
	if err != nil {
		t.Fatal(err)
	}
	count := func() (n int) {
		t.Helper()
		if err := d.Pool().QueryRow(ctx, "SELECT count(*) FROM effects").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for name, p := range map[string]*txinbox.Processor[pgx.Tx]{"queued": queued, "declarative": declarative} {
		t.Run(name, func(t *testing.T) {
			before := count()
			cctx, cancel := context.WithCancel(ctx)
			stop, watched := make(chan struct{}), make(chan error, 1)
			go func() { watched <- cancelWhenSleeping(d.Pool(), cancel, stop) }()
			res, err := p.Process(cctx, []*txinbox.Message{{ID: name + "-1", Payload: []byte("x")}})
			close(stop)
			if werr := <-watched; werr != nil {
				t.Error(werr)
			}
			atReturn := count()
			time.Sleep(time.Second)
			if later := count(); later != atReturn {
				t.Fatalf("%d effects when Process returned (%v), %d a second later: the commit landed after Process returned", atReturn, err, later)
			}
			if err != nil || res[0].Outcome != txinbox.Processed || atReturn != before+1 {
				t.Errorf("Process: %v, outcome %v, %d new effects; want nil, processed, 1", err, res, atReturn-before)
			}

			// Ended before anything was sent: nothing commits.
			cctx, cancel = context.WithCancel(ctx)
			cancel()
			if _, err := p.Process(cctx, []*txinbox.Message{{ID: name + "-2", Payload: []byte("x")}}); err == nil {
				t.Error("Process with an ended context: no error")
			}
			time.Sleep(700 * time.Millisecond)
			if n := count(); n != before+1 {
				t.Errorf("%d new effects after a Process whose context had ended, want 1", n-before)
			}
		})
	}
}

// cancelWhenSleeping calls cancel once the server sleeps in the pg_sleep
// sent with a batch's commit, or in a claim's statement (whose text is
// longer than pg_stat_activity keeps, hence txinbox_inserted): the commit
// is then on its way, however slow the machine was to get there. It gives
// up when stop closes.
func cancelWhenSleeping(pool *pgxpool.Pool, cancel context.CancelFunc, stop <-chan struct{}) error {
	defer cancel()
	for {
		var n int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE pid <> pg_backend_pid() AND state = 'active' AND wait_event = 'PgSleep'
			  AND (query LIKE '%pg_sleep(0.5017)%' OR query LIKE '%txinbox_inserted%')`).Scan(&n)
		if err != nil || n > 0 {
			return err
		}
		select {
		case <-stop:
			return errors.New("Process returned before the commit's pg_sleep was seen running")
		case <-time.After(5 * time.Millisecond): // polling the server's view of the commit
		}
	}
}
