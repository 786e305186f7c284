package pgstore

import (
	"context"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgcore"
)

// ListDeadLettersSQL is the query of ListDeadLetters, for the tests that
// explain it.
func (d *Driver) ListDeadLettersSQL(f store.ListFilter) (string, []any) {
	return pgcore.ListDeadLettersSQL(d.core, f)
}

// ReadsPayload is readsPayload on the driver's pool.
func (d *Driver) ReadsPayload(ctx context.Context, statements []string) bool {
	return d.q.ReadsPayload(ctx, d.querier(), statements)
}
