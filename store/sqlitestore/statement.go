package sqlitestore

import (
	"context"
	"database/sql"

	"github.com/txinbox/txinbox/store"
)

var _ store.StatementRunner[*sql.Tx] = (*Driver)(nil)

// ExecTyped implements store.StatementRunner: SQLite has no parameter
// types to declare, so it is tx.ExecContext.
func (d *Driver) ExecTyped(ctx context.Context, tx *sql.Tx, statement string, args ...any) error {
	_, err := tx.ExecContext(ctx, statement, args...)
	return err
}

// CheckStatement implements store.StatementRunner: statement is prepared
// on the database, then closed; args are not needed.
func (d *Driver) CheckStatement(ctx context.Context, statement string, _ ...any) error {
	st, err := d.db.PrepareContext(ctx, statement)
	if err != nil {
		return err
	}
	return st.Close()
}
