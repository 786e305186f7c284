package server_test

import (
	"context"
	"log"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/purge"
	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/store/pgstore"
)

// pollSource is a source of the program's own: it feeds batches to its
// processor and acknowledges what the processor says may be acked.
type pollSource struct {
	proc  *txinbox.Processor[pgx.Tx]
	fetch func(ctx context.Context) ([]*txinbox.Message, error)
	ack   func(ctx context.Context, ids []string) error
}

func (s *pollSource) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		msgs, err := s.fetch(ctx)
		if err != nil {
			continue
		}
		res, err := s.proc.Process(ctx, msgs)
		if err != nil {
			continue // nothing of a batch that did not commit is acked
		}
		var ids []string
		for i, r := range res {
			if r.Outcome.Ack() {
				ids = append(ids, msgs[i].ID)
			}
		}
		s.ack(context.WithoutCancel(ctx), ids) //nolint:errcheck // unacked messages come back as duplicates
	}
	return nil
}

// A service over one PostgreSQL inbox: the source's processor gets the
// server's hooks (the drain, the metrics), the purger keeps 30 days, and
// /healthz, /readyz and /metrics are served on :9090.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://localhost:5432/shop")
	if err != nil {
		log.Fatal(err)
	}
	driver, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Config{HTTPListen: ":9090", Ping: pool.Ping, Gauges: driver, Durability: driver,
		Retention: server.Retention{Keep: 30 * 24 * time.Hour}, Purge: &purge.Config{}, Purger: driver})
	if err != nil {
		log.Fatal(err)
	}
	proc, err := txinbox.NewProcessor(driver, txinbox.Config[pgx.Tx]{Scope: "orders", Hooks: srv.Hooks(),
		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			_, err := tx.Exec(ctx, `INSERT INTO orders (id, body) VALUES ($1, $2)`, m.ID, m.Payload)
			return err
		}})
	if err != nil {
		log.Fatal(err)
	}
	src := &pollSource{proc: proc /* fetch and ack: the broker's client */}
	if err := srv.Add(server.Source{Name: "orders", Scope: "orders", Source: src}); err != nil {
		log.Fatal(err)
	}
	if err := srv.Run(ctx); err != nil { // until ctx is done, then the drain
		log.Fatal(err)
	}
}
