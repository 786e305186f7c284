package sqlitestore

import (
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"

	"modernc.org/sqlite"

	"github.com/txinbox/txinbox/store"
)

// guard is the commit guard of one physical connection. While a batch
// transaction is open on it (armed), SQLite's commit hook refuses every
// COMMIT but the processor's own, which turns it into a rollback, and its
// rollback hook notes every rollback but the processor's. A handler that
// runs COMMIT or ROLLBACK as SQL, or calls Commit or Rollback on the
// *sql.Tx it was given, thus never commits anything: the whole batch
// transaction rolls back, Check reports it, and the processor runs the
// other messages again without that one. The statements a handler runs
// after it ended the transaction would run in autocommit mode: while the
// guard is armed, their commits are refused too.
type guard struct {
	armed atomic.Bool
	own   atomic.Bool // the processor is ending the transaction

	mu    sync.Mutex
	ended string // what ended the transaction, "" while it is open
}

// hookRegisterer is the hook interface of modernc.org/sqlite's connection.
type hookRegisterer interface {
	RegisterCommitHook(sqlite.CommitHookFn)
	RegisterRollbackHook(sqlite.RollbackHookFn)
}

// guardOf returns the guard of conn's physical connection, installing the
// hooks the first time. It replaces hooks of the application's own on
// that connection.
func (d *Driver) guardOf(conn *sql.Conn) (*guard, error) {
	var g *guard
	err := conn.Raw(func(dc any) error {
		if v, ok := d.guards.Load(dc); ok {
			g = v.(*guard)
			return nil
		}
		hr, ok := dc.(hookRegisterer)
		if !ok {
			return fmt.Errorf("sqlitestore: the database driver %T has no commit hook (use modernc.org/sqlite)", dc)
		}
		g = &guard{}
		hr.RegisterCommitHook(g.onCommit)
		hr.RegisterRollbackHook(g.onRollback)
		d.guards.Store(dc, g)
		return nil
	})
	return g, err
}

func (g *guard) arm() {
	g.mu.Lock()
	g.ended = ""
	g.mu.Unlock()
	g.own.Store(false)
	g.armed.Store(true)
}

func (g *guard) disarm() {
	g.armed.Store(false)
	g.own.Store(false)
}

func (g *guard) note(what string) {
	g.mu.Lock()
	if g.ended == "" {
		g.ended = what
	}
	g.mu.Unlock()
}

// onCommit returns non-zero to turn a COMMIT into a rollback.
func (g *guard) onCommit() int32 {
	if !g.armed.Load() || g.own.Load() {
		return 0
	}
	g.note("it committed the transaction (COMMIT as SQL or tx.Commit; refused: the transaction rolled back)")
	return 1
}

func (g *guard) onRollback() {
	if g.armed.Load() && !g.own.Load() {
		g.note("it ended the transaction (ROLLBACK as SQL or tx.Rollback, or SQLite rolled it back after an interrupted statement)")
	}
}

func (g *guard) check() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended == "" {
		return nil
	}
	return &store.BrokenTxError{Reason: g.ended, Lost: true}
}
