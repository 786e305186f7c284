package pgstore_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
			return pgstore.Queue(tx, "SELECT pg_sleep(0.5)")
		}})
	if err != nil {
		t.Fatal(err)
	}
	declarative, err := txinbox.NewProcessor(d, txinbox.Config[pgx.Tx]{Scope: "declarative", Logger: logger,
		Effect: &txinbox.Effect{Statements: []string{"INSERT INTO effects SELECT message_id FROM new_messages, pg_sleep(0.5)"}}})
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
			time.AfterFunc(150*time.Millisecond, cancel)
			res, err := p.Process(cctx, []*txinbox.Message{{ID: name + "-1", Payload: []byte("x")}})
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
