package effect

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store"
)

// Effect is a Spec bound to a store: ready to give processors their
// effect (Apply) and to run for other messages (Run).
type Effect[TTx any] struct {
	spec Spec
	// join says that the store runs declarative effects
	// (store.EffectChecker.JoinsEffects), checker how to check them.
	join    bool
	checker store.EffectChecker
	// exec runs one statement in a transaction; runner, when the store
	// has one, also checks a statement at start.
	exec   func(ctx context.Context, tx TTx, statement string, args ...any) error
	runner store.StatementRunner[TTx]
	// used is how many parameters each statement gets (its highest $N,
	// at most MaxParams).
	used []int
}

// errNoOutboxTable is New's error for Outbox without Spec.OutboxTable.
var errNoOutboxTable = errors.New("effect: the outbox mode needs Spec.OutboxTable")

// errNoExec is New's error for a store it cannot run statements on.
var errNoExec = errors.New("effect: the store runs no statements: it implements no store.StatementRunner and its transactions are not *sql.Tx")

// New validates spec and binds it to driver: it asks the store whether an
// effect can join the claim's statement (store.EffectChecker; an error
// is New's) and how to run statements (store.StatementRunner, else
// ExecContext on a *sql.Tx). It prepares nothing: Check does.
func New[TTx any](ctx context.Context, driver store.Driver[TTx], spec Spec) (*Effect[TTx], error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.Mode == Outbox && spec.OutboxTable == "" {
		return nil, errNoOutboxTable
	}
	e := &Effect[TTx]{spec: spec}
	if c, ok := driver.(store.EffectChecker); ok {
		e.checker = c
		var err error
		if e.join, err = c.JoinsEffects(ctx); err != nil {
			return nil, fmt.Errorf("effect: asking the store whether it joins effects to the claim: %w", err)
		}
	}
	if r, ok := driver.(store.StatementRunner[TTx]); ok {
		e.exec, e.runner = r.ExecTyped, r
	} else if f, ok := any(sqlExec).(func(context.Context, TTx, string, ...any) error); ok {
		e.exec = f
	} else if spec.Mode != None {
		return nil, errNoExec
	}
	for _, s := range spec.Statements {
		e.used = append(e.used, store.InspectStatement(s).MaxParam) // at most MaxParams (Validate)
	}
	return e, nil
}

// sqlExec runs a statement on a database/sql transaction.
func sqlExec(ctx context.Context, tx *sql.Tx, statement string, args ...any) error {
	_, err := tx.ExecContext(ctx, statement, args...)
	return err
}

// Spec returns the effect's spec.
func (e *Effect[TTx]) Spec() Spec { return e.spec }

// Joined reports whether Apply joins the effect to the claim's statement.
func (e *Effect[TTx]) Joined() bool {
	return e.join && (e.spec.Mode == Outbox || e.spec.Mode == SQL && e.spec.SetBased())
}

// sample are values of the types of Params, for checking statements.
var sample = [MaxParams]any{"", "", "", "", "", "", "", "", []byte(nil), time.Time{}}

// Check prepares the statements of SQL once, so that a mistake fails at
// start rather than at every message: set-based statements in the
// claim's statement (store.EffectChecker; ErrNotJoined where the store
// cannot join them), the others one by one with their parameters' types
// (store.StatementRunner; not checked on a store without one).
func (e *Effect[TTx]) Check(ctx context.Context) error {
	if e.spec.Mode != SQL {
		return nil
	}
	if e.spec.SetBased() {
		if !e.join {
			return ErrNotJoined
		}
		if err := e.checker.CheckEffect(ctx, e.spec.Statements); err != nil {
			return fmt.Errorf("--effect-sql: %w", err)
		}
		return nil
	}
	if e.runner == nil {
		return nil
	}
	for i, s := range e.spec.Statements {
		if err := e.runner.CheckStatement(ctx, s, sample[:e.used[i]]...); err != nil {
			return fmt.Errorf("--effect-sql statement %d: %w", i+1, err)
		}
	}
	return nil
}

// Apply gives cfg the effect for the messages of a source (source names
// it: the outbox rows' source column and $4 of Params, e.g. "kafka"):
// joined to the claim's statement (txinbox.Config.Effect) when Joined,
// else cfg.Handler, run per message (Handler).
func (e *Effect[TTx]) Apply(cfg txinbox.Config[TTx], source string) txinbox.Config[TTx] {
	switch {
	case !e.Joined():
		cfg.Handler = e.Handler(source)
	case e.spec.Mode == SQL:
		cfg.Effect = &txinbox.Effect{Statements: e.spec.Statements, Headers: headersJSON}
	default:
		cols := "scope, message_id, part, source, content_type, payload"
		ct := contentTypeSQL
		if e.spec.MySQL {
			ct = contentTypeMySQL
		}
		vals := "scope, message_id, 0, '" + strings.ReplaceAll(source, "'", "''") + "', " + ct + ", payload"
		if e.spec.OutboxHeaders {
			cols, vals = cols+", headers", vals+", headers"
		}
		// No headers: "" makes new_messages.headers NULL (Effect.Headers).
		cfg.Effect = &txinbox.Effect{Statements: []string{"INSERT INTO " + e.spec.OutboxTable + " (" + cols + ") SELECT " + vals + " FROM new_messages"},
			Headers: outboxHeadersJSON}
	}
	return cfg
}
