package store

import (
	"context"
	"regexp"
	"strconv"
	"strings"
)

// Statement is what the text of an effect's statement says of it: the
// one place where txinbox reads a statement's text (pgstore asks
// PostgreSQL the rest, see pgstore.EffectSQL).
type Statement struct {
	// MaxParam is the highest $N the statement names (0: none). A
	// per-message statement gets $1 to MaxParam bound, so that it may skip
	// some ($1, $2, $7).
	MaxParam int
	// ReadsNewMessages reports whether the statement names new_messages:
	// the batch's new messages of a declarative effect
	// (txinbox.Config.Effect), which exists only in the claim's statement.
	ReadsNewMessages bool
}

// SetBased reports whether the statement is a declarative effect's
// (txinbox.Config.Effect): it reads new_messages and names no $N, which
// only a per-message statement is given.
func (s Statement) SetBased() bool { return s.ReadsNewMessages && s.MaxParam == 0 }

var paramRE = regexp.MustCompile(`\$([0-9]+)`)

// InspectStatement reads what the text of sql says (Statement). It reads
// the text as it is: a $N or new_messages inside a string literal or a
// comment counts too.
func InspectStatement(sql string) Statement {
	s := Statement{ReadsNewMessages: strings.Contains(sql, "new_messages")}
	for _, m := range paramRE.FindAllStringSubmatch(sql, -1) {
		if v, err := strconv.Atoi(m[1]); err == nil {
			s.MaxParam = max(s.MaxParam, v)
		}
	}
	return s
}

// StatementRunner is the optional Driver interface of a store that runs
// the per-message statements of an effect given without Go (package
// effect) in its transactions, with the parameter types declared rather
// than inferred from the statement: a statement may then leave a
// parameter unnamed ($1, $2, $7) or cast one ($7::bigint). Without it,
// package effect runs them with database/sql's ExecContext when TTx is
// *sql.Tx, and checks nothing at start.
type StatementRunner[TTx any] interface {
	// ExecTyped runs statement in tx with args bound to $1, $2, ..., each
	// parameter's type declared from its argument's Go type: string is
	// text, []byte bytea (nil is NULL), time.Time timestamptz, int bigint;
	// a *string is text of the type the statement gives it (a jsonb
	// column's), nil is NULL.
	ExecTyped(ctx context.Context, tx TTx, statement string, args ...any) error
	// CheckStatement prepares statement, with the parameter types that
	// ExecTyped declares for args, without running it: a syntax error or
	// an unknown table or column shows before the first message.
	CheckStatement(ctx context.Context, statement string, args ...any) error
}

// EffectChecker is the optional Driver interface that says, before the
// first batch, whether a declarative effect (txinbox.Config.Effect) can
// run on this database and whether its statements are valid. Package
// effect asks it before joining an effect to the claim; without it, an
// effect without Go runs per message.
type EffectChecker interface {
	// JoinsEffects reports whether the store runs a declarative effect on
	// this database (pgstore: not on the partitioned layout).
	JoinsEffects(ctx context.Context) (bool, error)
	// CheckEffect prepares the claim statement of a declarative effect
	// once, so that a mistake in the statements (a syntax error, an
	// unknown table or column) shows before the first batch.
	CheckEffect(ctx context.Context, statements []string) error
}
