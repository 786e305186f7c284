package as4pg

import (
	"context"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/internal/as4sql"
)

var _ as4.Lister = (*Store)(nil)

// ListMessages lists stored messages with their receipts, newest first,
// through the received_at index.
func (s *tables) ListMessages(ctx context.Context, f as4.ListFilter) ([]as4.Listed, error) {
	var before *time.Time
	if !f.Before.IsZero() {
		before = &f.Before
	}
	rows, err := s.db.Query(ctx, s.t.Expand(`SELECT `+as4sql.ListColumns+`, m.received_at FROM {messages} m
		WHERE ($1 = '' OR m.scope = $1) AND ($2::timestamptz IS NULL OR m.received_at < $2)
		ORDER BY m.received_at DESC LIMIT $3`), f.Scope, before, as4sql.ListLimit(f))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []as4.Listed
	var l as4.Listed
	dest := append(as4sql.ListDest(&l), &l.ReceivedAt)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	rows.Close()
	return out, rows.Err()
}
