package pgstore_test

// Failure paths on a real PostgreSQL: connections cut in the middle of a
// batch (pg_terminate_backend, a TCP proxy, a server restart), handler
// errors that abort the transaction, and a duplicate delivery waiting for
// an in-flight first delivery. Every test asserts on the tables: inbox,
// attempts, dead_letters and an effects table with no unique constraint,
// so that a double execution shows.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgstore"
)

const failScope = "failures"

// waitLimit bounds every wait of these tests: a hang fails instead of
// blocking the run.
const waitLimit = 20 * time.Second

// fenv is one test's inbox: a fresh schema, a direct pool for assertions
// and admin statements, and the processors' pool (possibly through a
// proxy or on a private cluster).
type fenv struct {
	t      *testing.T
	ctx    context.Context
	schema string
	check  *pgxpool.Pool
	pool   *pgxpool.Pool
	d      *pgstore.Driver
	tracer tracer
}

// newFenv creates a schema through check, opens the processors' pool on
// url (adjusted by tweak), creates the effects table and migrates.
func newFenv(t *testing.T, check *pgxpool.Pool, url string, tweak func(*pgxpool.Config)) *fenv {
	t.Helper()
	e := &fenv{t: t, ctx: context.Background(), check: check}
	e.schema = testdb.NewSchema(t, check)
	if _, err := check.Exec(e.ctx, "CREATE TABLE "+e.schema+".effects (scope text NOT NULL, message_id text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	e.pool = e.newPool(url, tweak)
	e.d = e.driver(e.pool)
	if err := e.d.Migrate(e.ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

// newPool opens a pool on url whose search_path is the test's schema,
// closed at cleanup.
func (e *fenv) newPool(url string, tweak func(*pgxpool.Config)) *pgxpool.Pool {
	e.t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		e.t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = e.schema
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	cfg.ConnConfig.Tracer = &e.tracer
	if tweak != nil {
		tweak(cfg)
	}
	pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(pool.Close)
	return pool
}

func (e *fenv) driver(pool *pgxpool.Pool) *pgstore.Driver {
	e.t.Helper()
	d, err := pgstore.New(pool, pgstore.Options{Schema: e.schema})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// processor returns a processor on pool (the env's pool when nil), closed
// at cleanup.
func (e *fenv) processor(pool *pgxpool.Pool, cfg txinbox.Config[pgx.Tx]) *txinbox.Processor[pgx.Tx] {
	e.t.Helper()
	d := e.d
	if pool != nil {
		d = e.driver(pool)
	}
	cfg.Scope = failScope
	if cfg.TransientRetries == 0 {
		// Observe the raw failure: a transparent retry of the batch
		// would hide it (TestCutBatchRetriedTransparently covers that).
		cfg.TransientRetries = -1
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := txinbox.NewProcessor(d, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(p.Close)
	return p
}

// insertEffect is the handlers' business write.
func insertEffect(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
	_, err := tx.Exec(ctx, "INSERT INTO effects (scope, message_id) VALUES ($1, $2)", m.Scope, m.ID)
	return err
}

// rows is what the tables hold for one message id.
type rows struct {
	Inbox, Attempts, DeadLetters, Effects int
}

var processedOnce = rows{Inbox: 1, Effects: 1}

// tables reads every table of the inbox, by message id. Attempts is the
// attempts column of the message's attempts row (0 without one).
func (e *fenv) tables() map[string]rows {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, waitLimit)
	defer cancel()
	q := e.d.Tables().Expand(`
		SELECT 'inbox', message_id, 1 FROM {inbox}
		UNION ALL SELECT 'attempts', message_id, attempts FROM {attempts}
		UNION ALL SELECT 'dead_letters', message_id, 1 FROM {dead_letters}
		UNION ALL SELECT 'effects', message_id, 1 FROM ` + e.schema + `.effects`)
	rs, _ := e.check.Query(ctx, q)
	out := map[string]rows{}
	var table, id string
	var n int
	if _, err := pgx.ForEachRow(rs, []any{&table, &id, &n}, func() error {
		r := out[id]
		switch table {
		case "inbox":
			r.Inbox += n
		case "attempts":
			r.Attempts = n
		case "dead_letters":
			r.DeadLetters += n
		case "effects":
			r.Effects += n
		}
		out[id] = r
		return nil
	}); err != nil {
		e.t.Fatalf("reading the tables: %v", err)
	}
	return out
}

// wantTables asserts that the tables hold exactly want: ids missing from
// want must have no row anywhere.
func (e *fenv) wantTables(want map[string]rows) {
	e.t.Helper()
	got := e.tables()
	for id, w := range want {
		if got[id] != w {
			e.t.Errorf("tables for %q = %+v, want %+v", id, got[id], w)
		}
	}
	for id, g := range got {
		if _, ok := want[id]; !ok && g != (rows{}) {
			e.t.Errorf("unexpected rows for %q: %+v", id, g)
		}
	}
}

// each maps every id to the same expected rows.
func each(ids []string, r rows) map[string]rows {
	m := make(map[string]rows, len(ids))
	for _, id := range ids {
		m[id] = r
	}
	return m
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return out
}

// messages builds fresh messages for ids (Process fills Scope and
// ReceivedAt in place).
func messages(ids []string) []*txinbox.Message {
	out := make([]*txinbox.Message, len(ids))
	for i, id := range ids {
		out[i] = &txinbox.Message{ID: id, Source: "failures", SourcePosition: strconv.Itoa(i), Payload: []byte("payload of " + id)}
	}
	return out
}

// perMessage is a BatchHandler that runs handle for each message in turn.
func perMessage(handle txinbox.HandlerFunc[pgx.Tx]) txinbox.BatchHandlerFunc[pgx.Tx] {
	return func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
		for _, m := range msgs {
			if err := handle(ctx, tx, m); err != nil {
				return err
			}
		}
		return nil
	}
}

// processIn processes ids with p in mode: "offsets" through ProcessOffsets
// (positions 0, 1, ..., nothing saved before; it also returns the saved
// position), else through Process.
func processIn(e *fenv, p *txinbox.Processor[pgx.Tx], mode string, ids []string) ([]txinbox.Result, int64, error) {
	if mode != "offsets" {
		res, err := p.Process(e.ctx, messages(ids))
		return res, -1, err
	}
	pos := make([]int64, len(ids))
	for i := range pos {
		pos[i] = int64(i)
	}
	cp := txinbox.OffsetCheckpoint{Checkpoint: txinbox.Checkpoint{Source: "failures", Partition: 0, Positions: pos}, Saved: -1}
	return p.ProcessOffsets(e.ctx, messages(ids), cp)
}

// wantNotCommitted asserts that Process reported the batch as not
// committed: an error and no ackable result.
func wantNotCommitted(t *testing.T, res []txinbox.Result, err error, n int) {
	t.Helper()
	if err == nil {
		t.Errorf("Process returned no error; results %v", res)
	}
	if len(res) != n {
		t.Fatalf("got %d results, want %d", len(res), n)
	}
	for i, r := range res {
		if r.Outcome.Ack() || r.Outcome != 0 {
			t.Errorf("result[%d] = %v (err %v), want the zero outcome of an uncommitted batch", i, r.Outcome, r.Err)
		}
	}
}

func wantOutcome(t *testing.T, res []txinbox.Result, want txinbox.Outcome) {
	t.Helper()
	for i, r := range res {
		if r.Outcome != want {
			t.Errorf("result[%d] = %v (err %v), want %v", i, r.Outcome, r.Err, want)
		}
	}
}

// wantOneDeadLettered checks that the message of batch at index dead was
// dead-lettered and every other one processed.
func wantOneDeadLettered(t *testing.T, batch []string, res []txinbox.Result, dead int) {
	t.Helper()
	for i, r := range res {
		want := txinbox.Processed
		if i == dead {
			want = txinbox.DeadLettered
		}
		if r.Outcome != want {
			t.Errorf("%s: %v (%v), want %v", batch[i], r.Outcome, r.Err, want)
		}
	}
}

// tracer watches the processors' pools: it counts the ROLLBACK TO
// SAVEPOINT statements sent and can run a function once a COMMIT succeeds.
type tracer struct {
	rollbacksToSavepoint atomic.Int64
	afterCommit          atomic.Pointer[func()]
}

func (tr *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(data.SQL, "ROLLBACK TO SAVEPOINT") {
		tr.rollbacksToSavepoint.Add(1)
	}
	return ctx
}

func (tr *tracer) TraceQueryEnd(_ context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	if data.Err == nil && data.CommandTag.String() == "COMMIT" {
		if f := tr.afterCommit.Swap(nil); f != nil {
			(*f)()
		}
	}
}

// waitUntil polls cond until it holds, failing the test after waitLimit.
func waitUntil(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting until %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, waitLimit)
		}
		<-tick.C
	}
}

// receive waits for a value on ch, failing the test after waitLimit.
func receive[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("%s: nothing after %v", what, waitLimit)
		panic("unreachable")
	}
}

// cutCase describes where a batch loses its connection.
type cutCase struct {
	name string
	// at is the index of the message whose handler cuts the connection
	// after writing its effect and then returns nil: the failure shows at
	// the next statement, or at COMMIT when at is the last message.
	at int
	// failFirst, when >= 0, is the index of a message whose handler fails
	// (without SQL) the first time, so that the batch is redone with
	// savepoints and the cut happens in the savepoint pass.
	failFirst int
}

var cutCases = []cutCase{
	{name: "mid-batch", at: 2, failFirst: -1},
	{name: "before-commit", at: 4, failFirst: -1},
	{name: "savepoint-pass", at: 3, failFirst: 1},
}

// cutBatch processes a batch of five messages whose connection cut()
// breaks from inside a handler, while the transaction is open. It asserts
// that nothing was committed or is ackable, calls restore, and processes
// the same messages again: each must be Processed with exactly one effect.
// When a later handler met the closed connection and the database answered
// at once, the processor redid the batch in the same call (the message of
// that handler run alone, see store.Pinger): then each must be Processed
// with exactly one effect and no attempt counted, at once.
func cutBatch(e *fenv, c cutCase, cut func(ctx context.Context, tx pgx.Tx) error, restore func()) {
	t := e.t
	t.Helper()
	batch := ids("cut", 5)
	var cutArmed, failArmed, cutDone atomic.Bool
	cutArmed.Store(true)
	failArmed.Store(c.failFirst >= 0)
	p := e.processor(nil, txinbox.Config[pgx.Tx]{
		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			if err := insertEffect(ctx, tx, m); err != nil {
				return err
			}
			if c.failFirst >= 0 && m.ID == batch[c.failFirst] && failArmed.CompareAndSwap(true, false) {
				return errors.New("first attempt fails")
			}
			if m.ID == batch[c.at] && cutArmed.CompareAndSwap(true, false) {
				if err := cut(ctx, tx); err != nil {
					t.Errorf("cutting the connection: %v", err)
					return err
				}
				cutDone.Store(true)
			}
			return nil
		},
	})

	ctx, cancel := context.WithTimeout(e.ctx, waitLimit)
	defer cancel()
	res, err := p.Process(ctx, messages(batch))
	if !cutDone.Load() {
		t.Fatalf("the handler did not cut the connection (Process: %v, %v)", res, err)
	}
	if err == nil {
		t.Log("the database answered after the cut: the batch was redone at once")
		wantOutcome(t, res, txinbox.Processed)
		e.wantTables(each(batch, processedOnce))
		return
	}
	wantNotCommitted(t, res, err, len(batch))
	t.Logf("Process after the cut: %v", err)
	e.wantTables(nil)

	restore()

	res, err = p.Process(ctx, messages(batch))
	if err != nil {
		t.Fatalf("Process after recovery: %v", err)
	}
	wantOutcome(t, res, txinbox.Processed)
	e.wantTables(each(batch, processedOnce))
}

// TestConnectionTerminatedMidBatch kills the batch's backend with
// pg_terminate_backend from a separate connection while the transaction
// is open.
func TestConnectionTerminatedMidBatch(t *testing.T) {
	t.Parallel()
	for _, c := range cutCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			admin := testdb.Require(t)
			e := newFenv(t, admin, testdb.URL(), nil)
			cutBatch(e, c, func(ctx context.Context, tx pgx.Tx) error {
				var pid uint32
				if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
					return err
				}
				// With a timeout, pg_terminate_backend returns once the
				// backend is gone.
				var gone bool
				if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend($1, 10000)", pid).Scan(&gone); err != nil {
					return err
				}
				if !gone {
					return fmt.Errorf("backend %d still alive", pid)
				}
				return nil
			}, func() {})
		})
	}
}

// proxy is a TCP proxy to the database that can be cut: cutting closes
// every proxied connection and makes it close new ones at once, until
// restored.
type proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) port() uint16 { return uint16(p.ln.Addr().(*net.TCPAddr).Port) }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *proxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer client.Close()
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	defer server.Close()
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(server, client) //nolint:errcheck // ends when either side closes
		server.Close()
		client.Close()
	}()
	io.Copy(client, server) //nolint:errcheck // ends when either side closes
	client.Close()
	server.Close()
	<-done
}

// track registers c, or reports false when the proxy is down.
func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// cut closes every connection and refuses new ones until restore.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
}

func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

func (p *proxy) close() {
	p.ln.Close()
	p.cut()
	p.wg.Wait()
}

// newProxiedFenv is an env whose processors reach the database through a
// proxy.
func newProxiedFenv(t *testing.T) (*fenv, *proxy) {
	t.Helper()
	admin := testdb.Require(t)
	cc, err := pgx.ParseConfig(testdb.URL())
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(cc.Host, "/") {
		t.Skip("the test database is on a Unix socket; the proxy needs TCP")
	}
	px := startProxy(t, net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port))))
	e := newFenv(t, admin, testdb.URL(), func(cfg *pgxpool.Config) {
		cfg.ConnConfig.Host, cfg.ConnConfig.Port = "127.0.0.1", px.port()
		cfg.ConnConfig.Fallbacks = nil
	})
	return e, px
}

// TestDatabaseUnreachable cuts the network between the processor and the
// database: while it is cut, nothing is processed, ackable or written;
// once it is back, the message is processed exactly once.
func TestDatabaseUnreachable(t *testing.T) {
	t.Parallel()
	t.Run("while-idle", func(t *testing.T) {
		t.Parallel()
		e, px := newProxiedFenv(t)
		p := e.processor(nil, txinbox.Config[pgx.Tx]{Handler: insertEffect})
		ctx, cancel := context.WithTimeout(e.ctx, waitLimit)
		defer cancel()
		batch := []string{"down-1"}

		px.cut()
		// The pooled connection is dead and new ones are refused.
		for i := range 2 {
			res, err := p.Process(ctx, messages(batch))
			wantNotCommitted(t, res, err, len(batch))
			t.Logf("Process %d while cut: %v", i, err)
		}
		e.wantTables(nil)

		px.restore()
		res, err := p.Process(ctx, messages(batch))
		if err != nil {
			t.Fatalf("Process after restore: %v", err)
		}
		wantOutcome(t, res, txinbox.Processed)
		e.wantTables(each(batch, processedOnce))

		res, err = p.Process(ctx, messages(batch))
		if err != nil {
			t.Fatalf("Process of the redelivery: %v", err)
		}
		wantOutcome(t, res, txinbox.Duplicate)
		e.wantTables(each(batch, processedOnce))
	})
	for _, c := range cutCases {
		t.Run("in-handler/"+c.name, func(t *testing.T) {
			t.Parallel()
			e, px := newProxiedFenv(t)
			// The handler signals; another goroutine cuts and answers.
			cutReq, cutDone := make(chan struct{}), make(chan struct{})
			go func() {
				if _, ok := <-cutReq; ok {
					px.cut()
					close(cutDone)
				}
			}()
			defer close(cutReq) // ends the goroutine if the handler never signalled
			cutBatch(e, c, func(ctx context.Context, tx pgx.Tx) error {
				cutReq <- struct{}{}
				<-cutDone
				return nil
			}, px.restore)
		})
	}
}

// TestDatabaseUnreachableAfterCommit cuts the network right after a
// batch's COMMIT succeeded, before the failed attempt of one of its
// messages is recorded in a transaction of its own: the batch stays
// committed and ackable, the failed message stays a Retry, and only its
// attempt count is lost.
func TestDatabaseUnreachableAfterCommit(t *testing.T) {
	t.Parallel()
	e, px := newProxiedFenv(t)
	batch := ids("after-commit", 3)
	var failArmed atomic.Bool
	failArmed.Store(true)
	p := e.processor(nil, txinbox.Config[pgx.Tx]{Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
		if err := insertEffect(ctx, tx, m); err != nil {
			return err
		}
		if m.ID == batch[1] && failArmed.CompareAndSwap(true, false) {
			return errors.New("first attempt fails")
		}
		return nil
	}})
	ctx, cancel := context.WithTimeout(e.ctx, waitLimit)
	defer cancel()

	cut := px.cut
	e.tracer.afterCommit.Store(&cut)
	res, err := p.Process(ctx, messages(batch))
	if err != nil {
		t.Fatalf("Process: %v", err)
	}
	if e.tracer.afterCommit.Load() != nil {
		t.Fatal("no COMMIT was traced")
	}
	if res[0].Outcome != txinbox.Processed || res[2].Outcome != txinbox.Processed {
		t.Errorf("outcomes %v, %v; want processed", res[0].Outcome, res[2].Outcome)
	}
	// Not ackable; Attempts 0: the count could not be written. (RetryAfter
	// is 0 too: no backoff is applied when recording fails.)
	if r := res[1]; r.Outcome != txinbox.Retry || r.Attempts != 0 {
		t.Errorf("result[1] = %v, attempts %d (err %v); want retry, attempts 0", r.Outcome, r.Attempts, r.Err)
	}
	e.wantTables(map[string]rows{batch[0]: processedOnce, batch[2]: processedOnce})

	px.restore()
	res, err = p.Process(ctx, messages(batch))
	if err != nil {
		t.Fatalf("Process of the redelivery: %v", err)
	}
	for i, want := range []txinbox.Outcome{txinbox.Duplicate, txinbox.Processed, txinbox.Duplicate} {
		if res[i].Outcome != want {
			t.Errorf("redelivery result[%d] = %v (err %v), want %v", i, res[i].Outcome, res[i].Err, want)
		}
	}
	e.wantTables(each(batch, processedOnce))
}

// TestDatabaseRestartedMidBatch restarts a private cluster from inside a
// handler, while the batch's transaction is open.
func TestDatabaseRestartedMidBatch(t *testing.T) {
	t.Parallel()
	cl := testdb.StartCluster(t)
	// The assertions' pool pings every connection it hands out: the
	// restarts kill its idle connections too.
	check, err := pgxpool.NewWithConfig(context.Background(), func() *pgxpool.Config {
		cfg, err := pgxpool.ParseConfig(cl.URL())
		if err != nil {
			t.Fatal(err)
		}
		cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return true }
		return cfg
	}())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(check.Close)
	for _, mode := range []string{"fast", "immediate"} {
		for _, c := range cutCases[:2] {
			t.Run(mode+"/"+c.name, func(t *testing.T) {
				// One pooled connection: the one the restart kills is
				// the only one, so the next Process connects afresh.
				e := newFenv(t, check, cl.URL(), func(cfg *pgxpool.Config) { cfg.MaxConns = 1 })
				restartReq, restartDone := make(chan struct{}), make(chan error, 1)
				go func() {
					if _, ok := <-restartReq; ok {
						restartDone <- cl.Restart(mode)
					}
				}()
				defer close(restartReq)
				cutBatch(e, c, func(ctx context.Context, tx pgx.Tx) error {
					restartReq <- struct{}{}
					return <-restartDone
				}, func() {})
			})
		}
	}
}

// TestAbortedTransactionRecovered makes handlers run failing SQL, which
// aborts PostgreSQL's transaction: the batch must recover (by a rollback
// and a redo, and by ROLLBACK TO SAVEPOINT in the savepoint pass) and
// commit the others.
func TestAbortedTransactionRecovered(t *testing.T) {
	t.Parallel()
	divByZero := func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "SELECT 1/0")
		return err
	}
	notNull := func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO effects (scope, message_id) VALUES (NULL, 'x')")
		return err
	}
	cases := []struct {
		name  string
		batch bool // use a BatchHandler
		fail  map[int]func(context.Context, pgx.Tx) error
		codes map[int]string
		// rollbacks is how many ROLLBACK TO SAVEPOINT statements recover
		// the transaction.
		rollbacks int64
	}{
		// The culprit is known from the optimistic pass: it is excluded
		// from the redo, which needs no ROLLBACK TO SAVEPOINT.
		{name: "handler/one-failure", fail: map[int]func(context.Context, pgx.Tx) error{5: divByZero},
			codes: map[int]string{5: "22012"}, rollbacks: 0},
		// The second failure happens in the savepoint pass, after the
		// first was excluded.
		{name: "handler/two-failures", fail: map[int]func(context.Context, pgx.Tx) error{3: notNull, 7: divByZero},
			codes: map[int]string{3: "23502", 7: "22012"}, rollbacks: 1},
		// A batch handler's failure names no culprit: every message is
		// redone under a savepoint and the failing one is rolled back to it.
		{name: "batch-handler/one-failure", batch: true, fail: map[int]func(context.Context, pgx.Tx) error{5: notNull},
			codes: map[int]string{5: "23502"}, rollbacks: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newFenv(t, testdb.Require(t), testdb.URL(), nil)
			batch := ids("abort", 10)
			index := map[string]int{}
			for i, id := range batch {
				index[id] = i
			}
			// Each handler writes its effect first, so the rollback must
			// undo it.
			one := func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
				if err := insertEffect(ctx, tx, m); err != nil {
					return err
				}
				if f := c.fail[index[m.ID]]; f != nil {
					return f(ctx, tx)
				}
				return nil
			}
			cfg := txinbox.Config[pgx.Tx]{Handler: one}
			if c.batch {
				cfg = txinbox.Config[pgx.Tx]{BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*txinbox.Message) error {
					for _, m := range msgs {
						if err := one(ctx, tx, m); err != nil {
							return err
						}
					}
					return nil
				}}
			}
			var redone atomic.Bool
			cfg.Hooks = []txinbox.Hook{batchHook(func(info txinbox.BatchInfo) { redone.Store(info.Redone) })}
			p := e.processor(nil, cfg)

			ctx, cancel := context.WithTimeout(e.ctx, waitLimit)
			defer cancel()
			res, err := p.Process(ctx, messages(batch))
			if err != nil {
				t.Fatalf("Process: %v", err)
			}
			if !redone.Load() {
				t.Error("BatchInfo.Redone = false, want true")
			}
			want := each(batch, processedOnce)
			for i, r := range res {
				code, failed := c.codes[i]
				if !failed {
					if r.Outcome != txinbox.Processed {
						t.Errorf("result[%d] = %v (err %v), want processed", i, r.Outcome, r.Err)
					}
					continue
				}
				want[batch[i]] = rows{Attempts: 1}
				var pe *pgconn.PgError
				if r.Outcome != txinbox.Retry || r.Attempts != 1 || !errors.As(r.Err, &pe) || pe.Code != code {
					t.Errorf("result[%d] = %v, attempts %d, err %v; want retry, attempts 1, SQLSTATE %s", i, r.Outcome, r.Attempts, r.Err, code)
				}
			}
			e.wantTables(want)
			if n := e.tracer.rollbacksToSavepoint.Load(); n != c.rollbacks {
				t.Errorf("%d ROLLBACK TO SAVEPOINT sent, want %d", n, c.rollbacks)
			}
		})
	}
}

type batchHook func(txinbox.BatchInfo)

func (h batchHook) OnBatch(_ context.Context, info txinbox.BatchInfo) { h(info) }

// TestDuplicateWaitsForInFlightDelivery runs a second delivery of X while
// the first one's transaction holds X's claim: the second waits on the
// inbox's unique index, then is processed if the first rolls back, or is a
// duplicate if it commits. Either way X's effect is committed once.
func TestDuplicateWaitsForInFlightDelivery(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		firstA error // what A's handler returns
		wantA  txinbox.Outcome
		wantB  txinbox.Outcome
		want   rows
		// altA and altWant are the other valid ending: A's failure is
		// recorded only after B committed, so A learns that X is
		// processed and reports a Duplicate, counting no attempt.
		altA    txinbox.Outcome
		altWant rows
	}{
		{name: "first-rolls-back", firstA: errors.New("first delivery fails"), wantA: txinbox.Retry, wantB: txinbox.Processed,
			want: rows{Inbox: 1, Effects: 1, Attempts: 1}, altA: txinbox.Duplicate, altWant: processedOnce},
		{name: "first-commits", firstA: nil, wantA: txinbox.Processed, wantB: txinbox.Duplicate, want: processedOnce,
			altA: txinbox.Processed, altWant: processedOnce},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			admin := testdb.Require(t)
			e := newFenv(t, admin, testdb.URL(), nil)
			appB := "txinbox-b-" + e.schema
			poolB := e.newPool(testdb.URL(), func(cfg *pgxpool.Config) { cfg.ConnConfig.RuntimeParams["application_name"] = appB })
			ctx, cancel := context.WithTimeout(e.ctx, waitLimit)
			defer cancel()

			claimed, release := make(chan struct{}), make(chan error, 1)
			var armed atomic.Bool
			armed.Store(true)
			pA := e.processor(nil, txinbox.Config[pgx.Tx]{Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
				if err := insertEffect(ctx, tx, m); err != nil {
					return err
				}
				if !armed.CompareAndSwap(true, false) {
					return nil
				}
				close(claimed)
				select {
				case err := <-release:
					return err
				case <-ctx.Done():
					return ctx.Err()
				}
			}})
			pB := e.processor(poolB, txinbox.Config[pgx.Tx]{Handler: insertEffect})

			type outcome struct {
				res []txinbox.Result
				err error
			}
			doneA, doneB := make(chan outcome, 1), make(chan outcome, 1)
			batch := []string{"x"}
			go func() {
				res, err := pA.Process(ctx, messages(batch))
				doneA <- outcome{res, err}
			}()
			receive(t, "A's handler running", claimed)
			go func() {
				res, err := pB.Process(ctx, messages(batch))
				doneB <- outcome{res, err}
			}()
			waitUntil(t, "B waits for A's lock", func() (bool, error) {
				select {
				case o := <-doneB:
					return false, fmt.Errorf("B returned before A ended: %v, %v", o.res, o.err)
				default:
				}
				var waiting int
				err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE application_name = $1 AND wait_event_type = 'Lock'`, appB).Scan(&waiting)
				return waiting == 1, err
			})
			release <- c.firstA

			a := receive(t, "A's Process", doneA)
			b := receive(t, "B's Process", doneB)
			if a.err != nil || b.err != nil {
				t.Fatalf("Process: A %v, B %v", a.err, b.err)
			}
			want := c.want
			if a.res[0].Outcome == c.altA {
				want = c.altWant
			} else if a.res[0].Outcome != c.wantA {
				t.Errorf("outcome A %v (err %v), want %v or %v", a.res[0].Outcome, a.res[0].Err, c.wantA, c.altA)
			}
			if b.res[0].Outcome != c.wantB {
				t.Errorf("outcome B %v (err %v), want %v", b.res[0].Outcome, b.res[0].Err, c.wantB)
			}
			e.wantTables(map[string]rows{"x": want})
		})
	}
}

// TestCutBatchRetriedTransparently: with the default transient retries, a
// batch whose connection is terminated in the middle is rolled back and
// run again on a new connection inside the same Process call; every
// message is Processed with exactly one effect.
func TestCutBatchRetriedTransparently(t *testing.T) {
	t.Parallel()
	admin := testdb.Require(t)
	e := newFenv(t, admin, testdb.URL(), nil)
	batch := ids("retry", 5)
	var cut atomic.Bool
	p := e.processor(nil, txinbox.Config[pgx.Tx]{TransientRetries: 3,
		Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
			if err := insertEffect(ctx, tx, m); err != nil {
				return err
			}
			if m.ID == batch[2] && cut.CompareAndSwap(false, true) {
				var pid uint32
				if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
					return err
				}
				if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1, 10000)", pid); err != nil {
					return err
				}
			}
			return nil
		}})
	res, err := p.Process(e.ctx, messages(batch))
	if err != nil || !cut.Load() {
		t.Fatalf("Process = %v (cut %v), want a transparent retry", err, cut.Load())
	}
	wantOutcome(t, res, txinbox.Processed)
	e.wantTables(each(batch, processedOnce))
}
