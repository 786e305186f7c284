package purge_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/purge"
	"github.com/txinbox/txinbox/store/pgstore"
)

// One purge round now, as txinbox purge runs it: the inbox rows older than
// 30 days, and a table of the program's own with them.
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
	p, err := purge.New(driver, purge.Config{Retention: 30 * 24 * time.Hour, Tables: []purge.Table{{
		Name: "receipts",
		Purge: func(ctx context.Context, before time.Time, limit int) (int64, error) {
			tag, err := pool.Exec(ctx, `DELETE FROM receipts WHERE ctid = ANY(ARRAY(
				SELECT ctid FROM receipts WHERE sent_at < $1 LIMIT $2))`, before, limit)
			return tag.RowsAffected(), err
		},
	}}})
	if err != nil {
		log.Fatal(err)
	}
	res, err := p.Round(ctx) // or go p.Run(ctx): a round every minute
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Inbox, "inbox rows and", res.Tables["receipts"], "receipts purged")
}
