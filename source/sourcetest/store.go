package sourcetest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/store"
)

// Store names the store the suite's inbox lives in (Harness.Store).
type Store int

const (
	// PgStore is store/pgstore on the PostgreSQL test database
	// (internal/testdb), a schema per test, or a database per test
	// behind Harness.DatabaseURL. The default.
	PgStore Store = iota
	// MySQLStore is store/mysqlstore on the MariaDB or MySQL that
	// internal/mysqltest reaches (TXINBOX_MYSQL_URL), a database per
	// test; its connections run each batch as an XA transaction.
	MySQLStore
	// PgDBStore is store/pgdbstore (database/sql on pgx's stdlib) on the
	// PostgreSQL test database, a schema per test.
	PgDBStore
)

// String names the store in test messages.
func (s Store) String() string {
	switch s {
	case MySQLStore:
		return "mysqlstore"
	case PgDBStore:
		return "pgdbstore"
	}
	return "pgstore"
}

// Inbox is the processor of one consumer of the suite, on the store the
// harness chose (Harness.Store): Broker.Consume builds it with Processor
// and hands it to the source under test.
type Inbox struct {
	// Scope is the processor's scope.
	Scope string
	// Logger is the processor's logger (it discards).
	Logger *slog.Logger
	// Ordered is txinbox.Config.Ordered: a source that needs it (a
	// failed Kafka record holds back its partition) sets it.
	Ordered bool
	// Rename, when set, shows the suite's handler and outcome hooks
	// each message as Rename returns it (with offsets as the inbox, the
	// published id travels in a header); a message for which it
	// returns false fails permanently (txinbox.ErrNoMessageID).
	Rename func(*txinbox.Message) (*txinbox.Message, bool)

	s  settings
	db database
}

// Processor returns a new txinbox.Processor on the suite's store, running
// the suite's handler and hooks.
func (in Inbox) Processor() (source.Processor, error) {
	s := in.s
	s.scope, s.logger, s.ordered = in.Scope, in.Logger, in.Ordered
	if in.Rename != nil {
		s = renamed(s, in.Rename)
	}
	return in.db.processor(s)
}

// txn is a handler's transaction, whatever the store's type.
type txn interface {
	// effect inserts the suite's effect row of id.
	effect(ctx context.Context, id string) error
	// exec runs query.
	exec(ctx context.Context, query string) error
	// commit and rollback end the transaction through the driver's
	// transaction object (tx.Commit, tx.Rollback).
	commit(ctx context.Context) error
	rollback(ctx context.Context) error
}

// handler is a suite handler on any store.
type handler func(ctx context.Context, tx txn, m *txinbox.Message) error

// settings is the part of txinbox.Config the suite sets, not generic over
// the transaction type.
type settings struct {
	scope        string
	handler      handler
	maxBatchSize int
	maxAttempts  int
	ordered      bool
	backoff      func(int) time.Duration
	hooks        []txinbox.Hook
	logger       *slog.Logger
}

// configOf is s as the configuration of a processor whose transactions
// wrap turns into a txn.
func configOf[T any](s settings, wrap func(T) txn) txinbox.Config[T] {
	return txinbox.Config[T]{
		Scope: s.scope,
		Handler: func(ctx context.Context, tx T, m *txinbox.Message) error {
			return s.handler(ctx, wrap(tx), m)
		},
		MaxBatchSize: s.maxBatchSize,
		MaxAttempts:  s.maxAttempts,
		Ordered:      s.ordered,
		Backoff:      s.backoff,
		Hooks:        s.hooks,
		Logger:       s.logger,
	}
}

// database is the inbox database of one test (or one child process) on
// the harness's store, with the suite's effects table.
type database interface {
	// processor returns a processor running s.
	processor(s settings) (source.Processor, error)
	// effects counts the committed effect rows per message id.
	effects(ctx context.Context) (map[string]int, error)
	// effectOrder lists the effects' message ids in insertion order.
	effectOrder(ctx context.Context) ([]string, error)
	// deadLetters lists the scope's dead letters.
	deadLetters(ctx context.Context, scope string) ([]store.DeadLetterRecord, error)
}

// testDatabase is a database created for one test, with what the
// outage and hostile tests need of its store.
type testDatabase interface {
	database
	// child describes the database to a child process (openChild).
	child() childDB
	// proxied makes the processors built next reach the database
	// through a proxy, their sessions named app, and returns it.
	proxied(t *testing.T, app string) *Proxy
	// terminateSessions ends every session named app while the
	// database stays up.
	terminateSessions(t *testing.T, app string)
}

// hostileHandlersOf are the store's hostile handlers, each with what it
// must come to on that store.
func hostileHandlersOf(s Store) []hostileHandler {
	switch s {
	case MySQLStore:
		return mysqlHostileHandlers()
	case PgDBStore:
		return pgdbHostileHandlers()
	}
	return pgHostileHandlers()
}

// newProcessor is txinbox.NewProcessor as a source.Processor (nil on
// error, not a nil *txinbox.Processor).
func newProcessor[T any](d store.Driver[T], cfg txinbox.Config[T]) (source.Processor, error) {
	p, err := txinbox.NewProcessor(d, cfg)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// childDB tells a child process where the test's inbox is.
type childDB struct {
	Store  Store  `json:"store"`
	Schema string `json:"schema"` // pgstore without Harness.DatabaseURL
	URL    string `json:"url"`    // the database's URL otherwise
}

// newTestDatabase creates the test's inbox database on h's store, its
// inbox migrated and its effects table created.
func newTestDatabase(t *testing.T, h Harness) testDatabase {
	t.Helper()
	switch h.Store {
	case MySQLStore:
		return newMySQLDatabase(t)
	case PgDBStore:
		return newPgDBDatabase(t)
	}
	return newPgDatabase(t, h.DatabaseURL)
}

// openChild opens the database that c describes, in a child process.
func openChild(ctx context.Context, c childDB) (database, error) {
	switch c.Store {
	case MySQLStore:
		return openMySQLChild(ctx, c.URL)
	case PgDBStore:
		return openPgDBChild(ctx, c)
	}
	return openPgChild(ctx, c)
}

// renamed is s whose handler and outcome hooks see each message as
// rename returns it.
func renamed(s settings, rename func(*txinbox.Message) (*txinbox.Message, bool)) settings {
	h := s.handler
	s.handler = func(ctx context.Context, tx txn, m *txinbox.Message) error {
		rm, ok := rename(m)
		if !ok {
			return txinbox.Permanent(txinbox.ErrNoMessageID)
		}
		return h(ctx, tx, rm)
	}
	hooks := make([]txinbox.Hook, len(s.hooks))
	for i, hk := range s.hooks {
		hooks[i] = hk
		if oh, ok := hk.(txinbox.OutcomeHook); ok {
			hooks[i] = renamedOutcomes{oh, rename}
		}
	}
	s.hooks = hooks
	return s
}

// renamedOutcomes reports outcomes under the renamed messages.
type renamedOutcomes struct {
	h      txinbox.OutcomeHook
	rename func(*txinbox.Message) (*txinbox.Message, bool)
}

// OnOutcome reports res for m renamed.
func (r renamedOutcomes) OnOutcome(ctx context.Context, m *txinbox.Message, res txinbox.Result) {
	rm, _ := r.rename(m)
	r.h.OnOutcome(ctx, rm, res)
}
