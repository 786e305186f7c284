package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/txinbox/txinbox/store"
)

var (
	_ store.StatementRunner[pgx.Tx] = (*Driver)(nil)
	_ store.EffectChecker           = (*Driver)(nil)
)

// ExecTyped implements store.StatementRunner: statement runs with
// ExecParams and the parameter types of its arguments declared (typed),
// rather than left to PostgreSQL to infer, which fails for a parameter
// the statement does not name.
func (d *Driver) ExecTyped(ctx context.Context, tx pgx.Tx, statement string, args ...any) error {
	values, oids, formats, err := typed(args)
	if err != nil {
		return err
	}
	if h, ok := tx.(*handlerTx); ok {
		// A handler's transaction, guarded as its own statements are: a
		// deferred one begins with ctx, one the handler ended refuses.
		if err := h.begin(ctx); err != nil {
			return err
		}
		if !h.open() {
			return errTxEnded
		}
		tx = h.Tx
	}
	return tx.Conn().PgConn().ExecParams(ctx, statement, values, oids, formats, nil).Read().Err
}

// CheckStatement implements store.StatementRunner: statement is prepared
// (unnamed) with the parameter types ExecTyped declares for args.
func (d *Driver) CheckStatement(ctx context.Context, statement string, args ...any) error {
	_, oids, _, err := typed(args)
	if err != nil {
		return err
	}
	c, err := d.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	_, err = c.Conn().PgConn().Prepare(ctx, "", statement, oids)
	return err
}

// typed encodes args for ExecParams: each value, its declared type (0:
// the statement's) and its format (1: binary).
func typed(args []any) (values [][]byte, oids []uint32, formats []int16, err error) {
	values, oids, formats = make([][]byte, len(args)), make([]uint32, len(args)), make([]int16, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			values[i], oids[i] = []byte(v), pgtype.TextOID
		case []byte:
			values[i], oids[i], formats[i] = v, pgtype.ByteaOID, 1 // binary bytea is the bytes themselves
		case time.Time:
			values[i], oids[i] = []byte(v.UTC().Format("2006-01-02 15:04:05.999999Z07:00")), pgtype.TimestamptzOID
		case int:
			values[i], oids[i] = strconv.AppendInt(nil, int64(v), 10), pgtype.Int8OID
		case *string:
			if v != nil {
				values[i] = []byte(*v)
			}
		default:
			return nil, nil, nil, fmt.Errorf("pgstore: parameter $%d: unexpected %T", i+1, a)
		}
	}
	return values, oids, formats, nil
}

// JoinsEffects implements store.EffectChecker: a declarative effect runs
// on the unpartitioned layout only (errEffectPartitioned).
func (d *Driver) JoinsEffects(ctx context.Context) (bool, error) {
	partitioned, err := d.Partitioned(ctx)
	return err == nil && !partitioned, err
}
