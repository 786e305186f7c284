package mysqlstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// BenchmarkInFlightLocks is what store.InFlightLocker adds to a batch of
// 16 keys (httpinbox's default batch) and of 100: the GET_LOCK statement
// before the claim and the release after the transaction ended, against
// a batch transaction begun and rolled back without them.
func BenchmarkInFlightLocks(b *testing.B) {
	d, err := mysqlstore.New(mysqltest.Open(b, mysqltest.NewDatabase(b), 4), mysqlstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	keys := make([]store.Key, 100)
	for i := range keys {
		keys[i] = store.Key{Scope: "bench", MessageID: fmt.Sprint("key-", i)}
	}
	for _, n := range []int{0, 16, 100} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			for b.Loop() {
				tx, err := d.Begin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if n > 0 {
					if _, err := tx.(store.InFlightLocker).TryLockKeys(ctx, keys[:n]); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Rollback(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
