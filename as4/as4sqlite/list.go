package as4sqlite

import (
	"context"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/internal/as4sql"
)

var _ as4.Lister = (*Store)(nil)

// ListMessages lists stored messages with their receipts, newest first,
// through the received_at index.
func (s *Store) ListMessages(ctx context.Context, f as4.ListFilter) ([]as4.Listed, error) {
	const layout = "2006-01-02T15:04:05.000000000Z"
	before := ""
	if !f.Before.IsZero() {
		before = f.Before.UTC().Format(layout)
	}
	rows, err := s.db.QueryContext(ctx, s.t.Expand(`SELECT `+as4sql.ListColumns+`, m.received_at FROM {messages} m
		WHERE (?1 = '' OR m.scope = ?1) AND (?2 = '' OR m.received_at < ?2)
		ORDER BY m.received_at DESC LIMIT ?3`), f.Scope, before, as4sql.ListLimit(f))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []as4.Listed
	for rows.Next() {
		var l as4.Listed
		var at string
		if err := rows.Scan(append(as4sql.ListDest(&l), &at)...); err != nil {
			return nil, err
		}
		if l.ReceivedAt, err = time.Parse(layout, at); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}
