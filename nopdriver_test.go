package txinbox

import (
	"context"
	"database/sql"
	"errors"

	"github.com/txinbox/txinbox/store"
)

// nopDriver is only for configuration tests; behaviour is tested against
// real databases in store/storetest.
type nopDriver struct{}

var errNop = errors.New("nopDriver")

func (nopDriver) Begin(context.Context) (store.Tx[*sql.Tx], error) { return nil, errNop }
func (nopDriver) RecordFailures(context.Context, []store.FailureRow, int) ([]store.FailureResult, error) {
	return nil, errNop
}
func (nopDriver) Checkpoints(context.Context, string, string) (map[int32]int64, error) {
	return nil, errNop
}
func (nopDriver) IsTransient(error) bool { return false }
