package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/txinbox/txinbox/store"
)

var _ store.StatementRunner[*sql.Tx] = (*Driver)(nil)

var dollarParam = regexp.MustCompile(`\$([0-9]+)`)

// positional turns the $1, $2, ... of an effect's statement (txinbox's
// form on every database) into MySQL's "?", and returns the arguments in
// the order the markers appear: $N may be named twice, skipped, or out of
// order. Like store.InspectStatement, it reads the text as it is (a $N
// inside a string literal counts too).
func positional(statement string, args []any) (string, []any, error) {
	var out []any
	var bad error
	q := dollarParam.ReplaceAllStringFunc(statement, func(m string) string {
		n, _ := strconv.Atoi(m[1:])
		if n < 1 || n > len(args) {
			bad = fmt.Errorf("mysqlstore: the statement names %s, but %d parameters are given", m, len(args))
			return m
		}
		out = append(out, bindable(args[n-1]))
		return "?"
	})
	return q, out, bad
}

// bindable is an effect's argument as the store binds it: a time as UTC
// text (DATETIME), a *string as its text or NULL.
func bindable(a any) any {
	switch v := a.(type) {
	case time.Time:
		return formatTime(v)
	case *string:
		if v == nil {
			return nil
		}
		return *v
	}
	return a
}

// ExecTyped implements store.StatementRunner: the statement's $N become
// "?" bound in the order they appear (positional), in tx.
func (d *Driver) ExecTyped(ctx context.Context, tx *sql.Tx, statement string, args ...any) error {
	q, a, err := positional(statement, args)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, q, a...)
	return err
}

// CheckStatement implements store.StatementRunner: the server prepares
// the statement (a syntax error, an unknown table or column fails here),
// which is then closed unrun.
func (d *Driver) CheckStatement(ctx context.Context, statement string, args ...any) error {
	q, _, err := positional(statement, args)
	if err != nil {
		return err
	}
	c, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return prepareCheck(ctx, c, q)
}
