package as4pg

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/internal/as4sql"
)

var _ as4.Lister = (*Store)(nil)

// ListMessages lists stored messages with their receipts, newest first,
// through the received_at index.
func (s *Store) ListMessages(ctx context.Context, f as4.ListFilter) ([]as4.Listed, error) {
	var before *time.Time
	if !f.Before.IsZero() {
		before = &f.Before
	}
	rows, _ := s.pool.Query(ctx, s.t.Expand(`SELECT `+as4sql.ListColumns+`, m.received_at FROM {messages} m
		WHERE ($1 = '' OR m.scope = $1) AND ($2::timestamptz IS NULL OR m.received_at < $2)
		ORDER BY m.received_at DESC LIMIT $3`), f.Scope, before, as4sql.ListLimit(f))
	var out []as4.Listed
	var l as4.Listed
	_, err := pgx.ForEachRow(rows, append(as4sql.ListDest(&l), &l.ReceivedAt), func() error {
		out = append(out, l)
		return nil
	})
	return out, err
}
