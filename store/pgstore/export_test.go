package pgstore

import (
	"context"

	"github.com/txinbox/txinbox/store"
)

// ListDeadLettersSQL is listDeadLettersSQL, for the tests that explain it.
func (d *Driver) ListDeadLettersSQL(f store.ListFilter) (string, []any) {
	return d.listDeadLettersSQL(f)
}

// ReadsPayload is readsPayload on the driver's pool.
func (d *Driver) ReadsPayload(ctx context.Context, statements []string) bool {
	return d.q.readsPayload(ctx, d.pool, statements)
}
