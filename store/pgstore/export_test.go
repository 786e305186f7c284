package pgstore

import "github.com/txinbox/txinbox/store"

// ListDeadLettersSQL is listDeadLettersSQL, for the tests that explain it.
func (d *Driver) ListDeadLettersSQL(f store.ListFilter) (string, []any) {
	return d.listDeadLettersSQL(f)
}
