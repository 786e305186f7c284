package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/txinbox/txinbox/effect"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/store"
)

// statements is a repeatable string flag.
type statements []string

func (s *statements) String() string { return strings.Join(*s, "; ") }

// Set adds one statement.
func (s *statements) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("empty statement")
	}
	*s = append(*s, v)
	return nil
}

// Reset empties the list (the environment replaces the file's statements).
func (s *statements) Reset() { *s = nil }

// effectSpec is the effect of --effect and --effect-sql.
func (o *serveOptions) effectSpec() effect.Spec {
	return effect.Spec{Mode: effect.Mode(o.Effect), Statements: o.EffectSQL}
}

// newEffect binds the effect of --effect and --effect-sql to the inbox
// database.
func newEffect[TTx any](ctx context.Context, o *serveOptions, db *clikit.InboxDB, driver store.Driver[TTx]) (*effect.Effect[TTx], error) {
	spec := o.effectSpec()
	spec.OutboxTable = db.OutboxTable()
	spec.OutboxHeaders = spec.Mode == effect.Outbox && outboxHasHeaders(ctx, db)
	spec.MySQL = db.Kind == "mysql"
	return effect.New(ctx, driver, spec)
}

// checkEffect prepares the effect's statements, so that a typo fails
// serve now rather than every message later.
func checkEffect[TTx any](ctx context.Context, e *effect.Effect[TTx], db *clikit.InboxDB) error {
	err := e.Check(ctx)
	if errors.Is(err, effect.ErrNotJoined) {
		return fmt.Errorf("%w (%s)", err, db.Where)
	}
	return err
}

// outboxHasHeaders reports whether the outbox table has a headers column
// (added by a later migration), which the outbox effect then fills.
func outboxHasHeaders(ctx context.Context, db *clikit.InboxDB) bool {
	return db.Exec(ctx, `SELECT headers FROM `+db.OutboxTable()+` WHERE 1 = 0`) == nil
}
