package as4my

import (
	"context"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/internal/as4sql"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// ListMessages lists stored messages with their receipts, newest first,
// through the received_at index.
func (s *Store) ListMessages(ctx context.Context, f as4.ListFilter) ([]as4.Listed, error) {
	before := ""
	if !f.Before.IsZero() {
		before = mysqlstore.FormatTime(f.Before)
	}
	rows, err := s.db.QueryContext(ctx, s.t.Expand(`SELECT `+as4sql.ListColumnsByRef+`, m.received_at FROM {messages} m
		WHERE (? = '' OR m.scope = ?) AND (? = '' OR m.received_at < ?)
		ORDER BY m.received_at DESC LIMIT ?`), f.Scope, f.Scope, before, before, as4sql.ListLimit(f))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []as4.Listed
	for rows.Next() {
		var l as4.Listed
		if err := rows.Scan(append(as4sql.ListDest(&l), mysqlstore.ScanTime(&l.ReceivedAt))...); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}
