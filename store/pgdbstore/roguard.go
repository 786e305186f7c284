package pgdbstore

import (
	"reflect"
	"strings"

	"github.com/txinbox/txinbox/store/internal/pgsql"
)

// The read-only guard: a handler that ends its transaction with COMMIT,
// END or ROLLBACK as SQL (the commit guard refuses the COMMIT: either way
// the batch transaction rolls back) and goes on writing must not commit
// those writes alone, in autocommit mode. database/sql hands the *sql.Tx
// itself to the handler, so the store cannot refuse the statements; the
// server can: the batch's connection runs with
// default_transaction_read_only on at session level, the batch
// transaction alone read-write, so that every write of an autocommitted
// statement after the transaction ended fails with SQLSTATE 25006
// (reads still work). The setting must be made outside the transaction:
// one made inside it is undone with it, exactly when it is needed.
//
// Its cost: one round trip before the BEGIN (guardOn); on drivers whose
// BEGIN does not say READ WRITE (pgx's stdlib sends a bare "begin",
// which the session's setting makes read-only), a second after it
// (readWrite). The successful commit turns the setting off in the
// commit guard's statement (guardCommit: a non-local setting made in the
// transaction, kept by its COMMIT); every other end of the batch turns it
// off with a round trip (guardOff) before the connection goes back to
// the pool, or closes the connection.
const (
	guardOn     = "SET default_transaction_read_only = on"
	guardOff    = "SET default_transaction_read_only = off"
	readWrite   = "SET TRANSACTION READ WRITE"
	guardCommit = pgsql.CommitSetting + ", set_config('default_transaction_read_only', 'off', false)"
)

// beginsReadWrite lists the database/sql drivers (by package) whose BEGIN
// says READ WRITE when sql.TxOptions.ReadOnly is false.
var beginsReadWrite = []string{"github.com/lib/pq"}

// saysReadWrite reports whether drv's BEGIN says READ WRITE.
func saysReadWrite(drv any) bool {
	t := reflect.TypeOf(drv)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for _, pkg := range beginsReadWrite {
		if strings.HasPrefix(t.PkgPath(), pkg) {
			return true
		}
	}
	return false
}
