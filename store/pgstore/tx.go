package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/internal/pgsql"
)

// pgTx begins lazily: when its first statement is the claim, the BEGIN
// travels in the same round trip (pgx.Batch.BeginTx), so a batch costs
// one round trip less.
type pgTx struct {
	pool *pgxpool.Pool
	// conn is the transaction's connection, held from its first
	// statement until it ends; tx is the transaction on it (nil until
	// begun, and again once ended).
	conn *pgxpool.Conn
	tx   pgx.Tx
	htx  *handlerTx
	// queue holds the statements handlers queued (Queue) that have not
	// been sent yet: they travel with the COMMIT (queue.go). queueMu
	// guards Queue's appends (a handler's goroutines may queue at once).
	queue   []queued
	queueMu sync.Mutex
	q       *queries
	layout  *layout
	// plan is the checkpoint the claim saves, if planned; saved is it
	// once the claim saved it.
	plan, saved *store.Checkpoint
	// advance holds the arguments of a deferred checkpoint move
	// (DeferAdvance) until the first round trip sends it; beginErr is
	// the error of a first round trip that a handler's statement sent.
	advance  []any
	beginErr error
}

var _ store.CheckpointPlanner = (*pgTx)(nil)

// PlanCheckpoint implements store.CheckpointPlanner: the claim, if it is
// the transaction's first statement, saves cp (plain layout).
func (t *pgTx) PlanCheckpoint(cp store.Checkpoint) {
	if t.tx == nil && !t.layout.partitioned {
		t.plan = &cp
	}
}

// txOptions begin every batch transaction: its COMMIT is pgsql.CommitSQL, the
// only one the commit guard lets through.
var txOptions = pgx.TxOptions{CommitQuery: pgsql.CommitSQL}

// Tx returns the open transaction as handlers see it: guarded, so that
// its Commit and Rollback are refused. The processor calls it only after
// the claim began the transaction, or with a deferred checkpoint move
// (DeferAdvance): then the handler's first statement begins it (lazy.go).
func (t *pgTx) Tx() pgx.Tx {
	if t.htx == nil || t.htx.Tx != t.tx {
		t.htx = &handlerTx{Tx: t.tx, owner: t}
	}
	return t.htx
}

// handlerTx is the pgx.Tx handed to handlers. Commit and Rollback end
// nothing: they return store.ErrTxEndByHandler and are reported by Check,
// so the message fails. Begin (a savepoint) and every statement pass
// through, but only while the transaction is open: after a handler ended
// it with COMMIT or ROLLBACK as SQL, its statements would run in
// autocommit mode, so they get errTxEnded instead (statements sent
// through Conn() are not guarded).
type handlerTx struct {
	pgx.Tx
	owner *pgTx
	ended string
}

var errTxEnded = errors.New("pgstore: the batch transaction has ended (a handler ran COMMIT or ROLLBACK as SQL): statement refused")

// open reports whether the transaction is still open: local state. A
// handler that kept its transaction after the batch ended finds it ended
// (its connection may serve another batch by then).
func (h *handlerTx) open() bool {
	if h.Tx == nil {
		return h.owner.waiting()
	}
	return h.owner.tx == h.Tx && h.Tx.Conn().PgConn().TxStatus() != 'I'
}

func (h *handlerTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := h.begin(ctx); err != nil {
		return nil, err
	}
	if !h.open() {
		return nil, errTxEnded
	}
	return h.Tx.Begin(ctx)
}

func (h *handlerTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if err := h.begin(ctx); err != nil {
		return 0, err
	}
	if !h.open() {
		return 0, errTxEnded
	}
	return h.Tx.CopyFrom(ctx, table, cols, src)
}

func (h *handlerTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := h.begin(ctx); err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	if !h.open() {
		return pgx.FailedBatchResults(b, errTxEnded)
	}
	return h.Tx.SendBatch(ctx, b)
}

func (h *handlerTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := h.begin(ctx); err != nil {
		return nil, err
	}
	if !h.open() {
		return nil, errTxEnded
	}
	return h.Tx.Prepare(ctx, name, sql)
}

func (h *handlerTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := h.begin(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	if !h.open() {
		return pgconn.CommandTag{}, errTxEnded
	}
	return h.Tx.Exec(ctx, sql, args...)
}

func (h *handlerTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := h.begin(ctx); err != nil {
		return nil, err
	}
	if !h.open() {
		return nil, errTxEnded
	}
	return h.Tx.Query(ctx, sql, args...)
}

func (h *handlerTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := h.begin(ctx); err != nil {
		return errRow{err}
	}
	if !h.open() {
		return errRow{}
	}
	return h.Tx.QueryRow(ctx, sql, args...)
}

// serverOrNetwork reports whether a handler's error says that the server
// or the network closed its connection (not its own context).
func serverOrNetwork(err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var pe *pgconn.PgError
	var ne net.Error
	return errors.As(err, &pe) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET)
}

// errRow is the Row of a QueryRow that was refused: err, else errTxEnded.
type errRow struct{ err error }

func (r errRow) Scan(...any) error {
	if r.err != nil {
		return r.err
	}
	return errTxEnded
}

func (h *handlerTx) Commit(context.Context) error {
	h.ended = "tx.Commit"
	return store.ErrTxEndByHandler
}

func (h *handlerTx) Rollback(context.Context) error {
	h.ended = "tx.Rollback"
	return store.ErrTxEndByHandler
}

// Check reads the connection's local state after a handler: no round trip.
func (t *pgTx) Check(herr error) error {
	if h := t.htx; h != nil && h.ended != "" {
		what := h.ended
		h.ended = ""
		return &store.BrokenTxError{Reason: "it called " + what + " on the transaction it was given (refused: the processor ends it)"}
	}
	if errors.Is(t.beginErr, store.ErrCheckpointMoved) {
		return store.ErrCheckpointMoved
	}
	if t.beginErr != nil {
		return &store.BrokenTxError{Lost: true, DatabaseFault: true,
			Reason: "the transaction could not begin at the handler's first statement: " + t.beginErr.Error()}
	}
	if t.tx == nil {
		return nil
	}
	pc := t.tx.Conn().PgConn()
	if pc.IsClosed() {
		if serverOrNetwork(herr) {
			return &store.BrokenTxError{Lost: true, ConnClosed: true, DatabaseFault: true,
				Reason: "the connection failed during the handler: " + herr.Error()}
		}
		return &store.BrokenTxError{Lost: true, ConnClosed: true,
			Reason: "its connection was closed during the handler (pgx closes it when a statement's context expires, e.g. the handler's own deadline)"}
	}
	if errors.Is(herr, errQueuedEndedTx) { // ROLLBACK AND CHAIN leaves a transaction open, not the batch's
		return &store.BrokenTxError{Lost: true, Reason: "a statement it queued ended the transaction (COMMIT or ROLLBACK as SQL)"}
	}
	switch pc.TxStatus() {
	case 'I':
		return &store.BrokenTxError{Lost: true,
			Reason: "it ended the transaction with COMMIT or ROLLBACK as SQL (the commit guard refuses such a COMMIT: the transaction rolled back)"}
	case 'E':
		return &store.BrokenTxError{Aborted: true,
			Reason: "a statement failed in the handler and the handler returned nil (the transaction was aborted, SQLSTATE 25P02)"}
	}
	return nil
}

// begin starts the transaction if no statement did yet.
func (t *pgTx) begin(ctx context.Context) error {
	if t.tx != nil {
		return nil
	}
	b := t.firstBatch()
	if t.layout.partitioned {
		// Taken before any savepoint: a lock taken inside one would be
		// released by ROLLBACK TO SAVEPOINT.
		b.Queue(lockPeriodShared, t.layout.periodLock)
	}
	return t.sendFirst(ctx, b)
}

// firstBatch begins a transaction's first round trip: the BEGIN,
// pgsql.MarkBatch, which the commit checks, and a deferred checkpoint move
// (DeferAdvance), which arms the commit guard.
func (t *pgTx) firstBatch() *pgx.Batch {
	b := &pgx.Batch{}
	b.BeginTx(txOptions)
	b.Queue(pgsql.MarkBatch)
	if t.advance != nil {
		b.Queue(t.q.advanceGuarded, t.advance...)
		t.advance = nil
	}
	return b
}

func (t *pgTx) Claim(ctx context.Context, rows []store.ClaimRow) ([]store.ClaimResult, error) {
	v := viewClaimRows(rows)
	args := newClaimArgs(v)
	res := make([]store.ClaimResult, len(rows))
	claim, classify := t.q.Claim, t.q.ClaimClassify
	plan := t.takePlan()
	if plan != nil {
		claim, classify = t.q.ClaimCP, t.q.ClaimClassifyCP
		args = append(args, checkpointArgs(plan)...)
	}
	var err error
	switch {
	case t.layout.partitioned:
		err = t.claimed(ctx, t.q.ClaimPartitioned, markInserted(v, res), args...)
	case t.q.duplicates.Load() && distinct(v):
		err = t.claimed(ctx, classify, classifyClaimed(res), args...)
	default:
		err = t.claimed(ctx, claim, markInserted(v, res), args...)
	}
	if err != nil {
		return res, err
	}
	t.saved = plan
	return t.afterClaim(ctx, res, v)
}

// takePlan returns the planned checkpoint (PlanCheckpoint) for the claim
// to save in its statement, nil if none was planned or the transaction
// began before the claim; either way the plan is used up. The claim sets
// t.saved to it once it succeeded.
func (t *pgTx) takePlan() *store.Checkpoint {
	plan := t.plan
	t.plan = nil
	if t.tx != nil {
		return nil
	}
	return plan
}

// checkpointArgs are the parameters of a checkpoint's row, in the order
// the statements that save one take them.
func checkpointArgs(cp *store.Checkpoint) []any {
	return []any{cp.Scope, cp.Source, cp.Partition, cp.Position}
}

// newClaimArgs are a claim's parameters $1-$7 (batchRows): columns of v,
// read in place; a column with one value throughout goes as that one
// value.
func newClaimArgs(v claimView) []any {
	text := func(field func(*store.ClaimRow) *string, compact bool) textColumn {
		n := v.n
		if compact {
			n = v.length(func(a, b *store.ClaimRow) bool { return *field(a) == *field(b) })
		}
		return textColumn{v: v, n: n, field: field}
	}
	return []any{
		text(func(r *store.ClaimRow) *string { return &r.Scope }, true),
		text(func(r *store.ClaimRow) *string { return &r.MessageID }, false),
		text(func(r *store.ClaimRow) *string { return &r.Source }, true),
		text(func(r *store.ClaimRow) *string { return &r.SourcePosition }, true),
		text(func(r *store.ClaimRow) *string { return &r.PartitionKey }, true),
		hashColumn{v},
		// The database keeps no location: equal instants are one value.
		receivedColumn{v, v.length(func(a, b *store.ClaimRow) bool { return a.ReceivedAt.Equal(b.ReceivedAt) })},
	}
}

// afterClaim chooses the next claim and looks up the keys the claim left
// unanswered.
func (t *pgTx) afterClaim(ctx context.Context, res []store.ClaimResult, v claimView) ([]store.ClaimResult, error) {
	if !t.layout.partitioned {
		t.expectDuplicates(res)
	}
	// The keys the claim left unanswered: every key not inserted, or with
	// claimClassify those whose conflicting row was committed after the
	// claim's snapshot.
	var pending []int
	for i := range res {
		if res[i].Status == 0 {
			pending = append(pending, i)
		}
	}
	if len(pending) == 0 {
		return res, nil
	}
	return res, t.lookup(ctx, res, pending, v)
}

// expectDuplicates chooses the next claim from this one's answer. The
// claim that also classifies the keys it did not insert saves a round
// trip to batches with duplicates, but costs every batch a little more
// server time than the one that returns the inserted keys only; with
// duplicates (redeliveries) coming in runs, the last batch is a good guess
// for the next one.
func (t *pgTx) expectDuplicates(res []store.ClaimResult) {
	dups := false
	for i := range res {
		if res[i].Status != store.ClaimNew {
			dups = true
			break
		}
	}
	if t.q.duplicates.Load() != dups {
		t.q.duplicates.Store(dups)
	}
}

// distinct reports whether no key repeats in rows, as Claim's contract
// says: claimClassify would report every copy of a key inserted, the
// plain claim only one.
func distinct(v claimView) bool {
	seen := make(map[store.Key]struct{}, v.n)
	for i := range v.n {
		k := v.key(i)
		if _, ok := seen[k]; ok {
			return false
		}
		seen[k] = struct{}{}
	}
	return true
}

// claimed runs a claim statement, beginning the transaction in the same
// round trip if it is the first statement, and hands its rows to scan.
func (t *pgTx) claimed(ctx context.Context, claim string, scan func(pgx.Rows) error, args ...any) error {
	if t.tx != nil {
		rs, err := t.tx.Query(ctx, claim, args...)
		if err != nil {
			return err
		}
		return scan(rs)
	}
	b := t.firstBatch()
	if t.layout.partitioned {
		// Same round trip; the claim's own snapshot is taken after the
		// lock is granted (partition.go).
		b.Queue(lockPeriodShared, t.layout.periodLock)
	}
	b.Queue(claim, args...).Query(scan)
	return t.sendFirst(ctx, b)
}

// sendFirst sends b, the transaction's first round trip (it begins with
// pgx.Batch.BeginTx), on a connection the transaction holds until it
// ends, and closes its results.
func (t *pgTx) sendFirst(ctx context.Context, b *pgx.Batch) error {
	c, err := t.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	t.conn = c
	br := c.SendBatch(ctx, b)
	t.tx = br.Tx() // rolled back (or closed) by the caller on error
	return movedError(br.Close())
}

// release hands the connection back to the pool once the transaction
// ended (the pool closes it if it is not idle).
func (t *pgTx) release() {
	t.tx, t.queue = nil, nil
	if t.conn != nil {
		t.conn.Release()
		t.conn = nil
	}
}

// classifyClaimed scans a claim ending in classifySelect: one row per
// key it did not insert, with its ordinal and the stored hashes its
// snapshot saw (a key with neither stays unanswered, for the lookup);
// the keys it does not return were inserted.
func classifyClaimed(res []store.ClaimResult) func(pgx.Rows) error {
	return func(rs pgx.Rows) error {
		for i := range res {
			res[i].Status = store.ClaimNew
		}
		var ord int
		var hash, dead []byte
		_, err := pgx.ForEachRow(rs, []any{&ord, &hash, &dead}, func() error {
			if ord < 1 || ord > len(res) {
				return fmt.Errorf("pgstore: claim returned ordinal %d for a batch of %d", ord, len(res))
			}
			r := &res[ord-1]
			r.Status = 0
			classifySeen(r, hash, dead)
			return nil
		})
		return err
	}
}

// markInserted scans a claim that returns the keys it inserted, and marks
// them ClaimNew. The keys are found by binary search over the batch's
// order sorted by key, compared with the result's bytes in place: no
// string or map entry per row.
func markInserted(v claimView, res []store.ClaimResult) func(pgx.Rows) error {
	return func(rs pgx.Rows) error {
		defer rs.Close()
		order := make([]int32, v.n)
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortFunc(order, func(a, b int32) int { return compareKeys(v.key(int(a)), v.key(int(b))) })
		for rs.Next() {
			raw := rs.RawValues()
			if len(raw) != 2 || raw[0] == nil || raw[1] == nil {
				return fmt.Errorf("pgstore: claim returned %d values, want a scope and a message id", len(raw))
			}
			k := store.Key{Scope: inPlace(raw[0]), MessageID: inPlace(raw[1])}
			j, ok := slices.BinarySearchFunc(order, k, func(e int32, k store.Key) int { return compareKeys(v.key(int(e)), k) })
			if !ok {
				return fmt.Errorf("pgstore: claim returned unknown key %q/%q", k.Scope, k.MessageID)
			}
			res[order[j]].Status = store.ClaimNew
		}
		return rs.Err()
	}
}

func compareKeys(a, b store.Key) int {
	if c := strings.Compare(a.Scope, b.Scope); c != 0 {
		return c
	}
	return strings.Compare(a.MessageID, b.MessageID)
}

// inPlace is b as a string without a copy, valid only while b is: a
// result's bytes, until the next row.
func inPlace(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// markOrdinals marks the rows whose 1-based ordinals the claim returns as
// inserted.
func markOrdinals(res []store.ClaimResult) func(pgx.Rows) error {
	return func(rs pgx.Rows) error {
		var ord int64
		_, err := pgx.ForEachRow(rs, []any{&ord}, func() error {
			if ord < 1 || ord > int64(len(res)) {
				return fmt.Errorf("pgstore: claim returned ordinal %d of a batch of %d", ord, len(res))
			}
			res[ord-1].Status = store.ClaimNew
			return nil
		})
		return err
	}
}

// classifySeen classifies a key that was not inserted from what a
// statement saw of it (the inbox row's and the dead letter's payload
// hashes), and reports whether it saw it at all.
func classifySeen(r *store.ClaimResult, hash, dead []byte) bool {
	switch {
	case hash != nil:
		r.Status, r.StoredHash = store.ClaimExisting, append([]byte(nil), hash...)
	case dead != nil:
		r.Status, r.StoredHash = store.ClaimDeadLettered, append([]byte(nil), dead...)
	default:
		return false
	}
	return true
}

// lookup fills in the rows at the indexes pending, in a statement of its
// own: a new READ COMMITTED snapshot, which sees the rows of the
// transactions the claim waited for. Only those are looked up, each index
// probe costs as much as an insert's.
func (t *pgTx) lookup(ctx context.Context, res []store.ClaimResult, pending []int, v claimView) error {
	lscopes, lids := make([]string, len(pending)), make([]string, len(pending))
	for j, i := range pending {
		k := v.key(i)
		lscopes[j], lids[j] = k.Scope, k.MessageID
	}
	lookup := t.q.Lookup
	if t.layout.partitioned {
		lookup = t.q.LookupPartitioned
	}
	var db querier = t.pool // after an autocommitted claim (CommitEffect)
	if t.tx != nil {
		db = t.tx
	}
	rs, err := db.Query(ctx, lookup, lscopes, lids)
	if err != nil {
		return err
	}
	var ord int
	var hash, dead []byte
	_, err = pgx.ForEachRow(rs, []any{&ord, &hash, &dead}, func() error {
		if ord < 1 || ord > len(pending) {
			return fmt.Errorf("pgstore: lookup returned ordinal %d for %d keys", ord, len(pending))
		}
		if i := pending[ord-1]; !classifySeen(&res[i], hash, dead) {
			return fmt.Errorf("%w: %q/%q", store.ErrClaimRace, v.key(i).Scope, v.key(i).MessageID)
		}
		return nil
	})
	return err
}

func (t *pgTx) RecordDrift(ctx context.Context, rows []store.DriftRow) error {
	if err := t.begin(ctx); err != nil {
		return err
	}
	return insertDrift(ctx, t.tx, t.q, rows)
}

func insertDrift(ctx context.Context, tx pgx.Tx, q *queries, rows []store.DriftRow) error {
	n := len(rows)
	scopes, ids, sources, positions := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	stored, received, at := make([][]byte, n), make([][]byte, n), make([]time.Time, n)
	for i, r := range rows {
		scopes[i], ids[i], sources[i], positions[i] = r.Scope, r.MessageID, r.Source, r.SourcePosition
		stored[i], received[i], at[i] = r.StoredHash, r.ReceivedHash, r.DetectedAt
	}
	_, err := tx.Exec(ctx, q.Drift, scopes, ids, sources, positions, stored, received, at)
	return err
}

func (t *pgTx) Savepoint(ctx context.Context) error {
	if err := t.begin(ctx); err != nil {
		return err
	}
	_, err := t.tx.Exec(ctx, "SAVEPOINT txinbox_message")
	return err
}

func (t *pgTx) RollbackToSavepoint(ctx context.Context) error {
	t.queue = nil // the failed handler's statements
	_, err := t.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT txinbox_message")
	return err
}

// ReleaseSavepoint releases the message's savepoint; when it is gone (a
// handler ended the transaction and began another: ROLLBACK AND CHAIN as
// SQL), the error is a *store.BrokenTxError, Lost.
func (t *pgTx) ReleaseSavepoint(ctx context.Context) error {
	_, err := t.tx.Exec(ctx, "RELEASE SAVEPOINT txinbox_message")
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "3B001" {
		return &store.BrokenTxError{Lost: true, Reason: "it ended the batch transaction and began another (ROLLBACK AND CHAIN as SQL?)"}
	}
	return err
}

// Commit commits, in one round trip with the statements handlers queued
// (queue.go); a transaction that never began (or ended) has nothing to
// commit.
func (t *pgTx) Commit(ctx context.Context) error {
	if t.tx == nil {
		if t.advance != nil {
			return t.commitDeferred(ctx)
		}
		return nil
	}
	defer t.release()
	if len(t.queue) > 0 {
		return t.commitQueued(ctx)
	}
	err := t.tx.Commit(ctx)
	if isNotBatchTx(err) {
		// A handler ended the batch transaction and began another
		// (ROLLBACK AND CHAIN as SQL): nothing of either is committed.
		return &store.BrokenTxError{Lost: true,
			Reason: "a handler ended the batch transaction (ROLLBACK AND CHAIN as SQL?): nothing committed"}
	}
	return err
}

// Rollback rolls back; a transaction that never began (or ended) has
// nothing to undo.
func (t *pgTx) Rollback(ctx context.Context) error {
	t.advance = nil
	if t.tx == nil {
		return nil
	}
	defer t.release()
	return t.tx.Rollback(ctx)
}

func (t *pgTx) DeadLetter(ctx context.Context, rows []store.DeadLetterRow) error {
	if err := t.begin(ctx); err != nil {
		return err
	}
	return insertDeadLetters(ctx, t.tx, t.q, rows)
}

func (t *pgTx) SaveCheckpoint(ctx context.Context, cp store.Checkpoint) error {
	if t.saved != nil {
		if *t.saved == cp {
			return nil // the claim saved it
		}
		return fmt.Errorf("pgstore: the claim saved checkpoint %d of %s/%s, the batch ends at %d", t.saved.Position,
			cp.Source, cp.Partition, cp.Position)
	}
	if err := t.begin(ctx); err != nil {
		return err
	}
	_, err := t.tx.Exec(ctx, t.q.Checkpoint, checkpointArgs(&cp)...)
	return err
}
