package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/internal/testkit"
	"github.com/txinbox/txinbox/purge"
	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/store/pgstore"
)

// chanSource is a source over a channel of batches: each batch goes
// through a real processor, and what the processor says may be acked is
// acked (recorded) after the commit, as the broker sources do.
type chanSource struct {
	proc     *txinbox.Processor[pgx.Tx]
	in       chan []*txinbox.Message
	ready    error
	lag      []source.Lag
	horizons []source.Horizon
	// gate, when set, holds RedeliveryHorizons until it is closed.
	gate chan struct{}

	mu    sync.Mutex
	acked []string
	// returned is set when Run returned.
	returned atomic.Bool
}

func (s *chanSource) Run(ctx context.Context) error {
	defer s.returned.Store(true)
	for {
		select {
		case <-ctx.Done():
			return nil
		case b := <-s.in:
			res, err := s.proc.Process(ctx, b)
			if err != nil {
				continue // nothing of a failed batch is acked
			}
			s.mu.Lock()
			for i, r := range res {
				if r.Outcome.Ack() {
					s.acked = append(s.acked, b[i].ID)
				}
			}
			s.mu.Unlock()
		}
	}
}

func (s *chanSource) Ready(context.Context) error { return s.ready }

func (s *chanSource) Lag(context.Context) ([]source.Lag, error) { return s.lag, nil }

func (s *chanSource) RedeliveryHorizons(ctx context.Context) ([]source.Horizon, error) {
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.horizons, nil
}

func (s *chanSource) ackedIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.acked...)
}

// fixture is a migrated inbox in a schema of its own.
type fixture struct {
	pool   *pgxpool.Pool
	driver *pgstore.Driver
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	admin := testdb.Require(t)
	pool := testdb.PoolIn(t, testdb.NewSchema(t, admin), 8)
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &fixture{pool: pool, driver: d}
}

// source returns a chanSource whose processor, of scope, runs handle with
// the server's hooks.
func (f *fixture) source(t *testing.T, srv *server.Server, scope string, handle txinbox.HandlerFunc[pgx.Tx]) *chanSource {
	t.Helper()
	p, err := txinbox.NewProcessor(f.driver, txinbox.Config[pgx.Tx]{Scope: scope, Handler: handle, Hooks: srv.Hooks()})
	if err != nil {
		t.Fatal(err)
	}
	return &chanSource{proc: p, in: make(chan []*txinbox.Message, 1)}
}

func (f *fixture) rows(t *testing.T, scope string) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM txinbox_inbox WHERE scope = $1`, scope).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// start runs srv until the returned stop, which returns Run's error.
func start(t *testing.T, srv *server.Server) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if checks, _ := srv.Ready(ctx); checks["started"] == "ok" {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned before it started: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the server did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(cancel)
	return func() error { cancel(); return <-done }
}

// blockingHandler signals entered when it runs and waits for release (or
// the end of its transaction's context).
func blockingHandler(entered, release chan struct{}) txinbox.HandlerFunc[pgx.Tx] {
	return func(ctx context.Context, _ pgx.Tx, _ *txinbox.Message) error {
		close(entered)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TestStopCommitsAndAcksTheBatchInFlight: a stop while a batch is in its
// handler lets the batch commit and be acked (within the shutdown
// timeout), and Run returns nil.
func TestStopCommitsAndAcksTheBatchInFlight(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv, err := server.New(server.Config{Logger: quiet(), ShutdownTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	src := f.source(t, srv, "orders", blockingHandler(entered, release))
	if err := srv.Add(server.Source{Name: "orders", Scope: "orders", Source: src}); err != nil {
		t.Fatal(err)
	}
	stop := start(t, srv)
	src.in <- []*txinbox.Message{{ID: "o-1", Payload: []byte("1")}}
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	waitFor(t, func() bool { // the stop has begun; the batch still waits in its handler
		checks, _ := srv.Ready(context.Background())
		return checks["started"] != "ok"
	})
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("Run: %v, want nil (the batch in flight finished)", err)
	}
	if n, acked := f.rows(t, "orders"), src.ackedIDs(); n != 1 || len(acked) != 1 {
		t.Errorf("%d inbox rows, acked %v; want the batch in flight committed and acked", n, acked)
	}
}

// TestStopCutsTheBatchPastTheTimeout: a batch still in its handler when
// the shutdown timeout passes is cut: rolled back, nothing acked, and Run
// returns a *CutError naming the source.
func TestStopCutsTheBatchPastTheTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv, err := server.New(server.Config{Logger: quiet(), ShutdownTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	src := f.source(t, srv, "orders", blockingHandler(entered, nil))
	if err := srv.Add(server.Source{Name: "orders", Scope: "orders", Source: src}); err != nil {
		t.Fatal(err)
	}
	stop := start(t, srv)
	src.in <- []*txinbox.Message{{ID: "o-1", Payload: []byte("1")}}
	<-entered
	err = stop()
	var cut *server.CutError
	if !errors.As(err, &cut) || cut.Batches != 1 || len(cut.Stuck) != 1 || cut.Stuck[0] != "orders" ||
		!strings.Contains(err.Error(), "1 batches still in flight after 300ms were cut (sources not stopped: orders)") {
		t.Fatalf("Run: %v, want a cut of 1 batch of orders", err)
	}
	if !src.returned.Load() {
		t.Error("Run returned with the source still in its cut batch: the cut did not end the batch")
	}
	if n, acked := f.rows(t, "orders"), src.ackedIDs(); n != 0 || len(acked) != 0 {
		t.Errorf("%d inbox rows, acked %v; want none of the cut batch", n, acked)
	}
}

// TestReadinessPerSource: /readyz names each source; one not connected
// makes it 503 while the database and the other source are ok.
func TestReadinessPerSource(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv, err := server.New(server.Config{Logger: quiet(), Ping: f.pool.Ping})
	if err != nil {
		t.Fatal(err)
	}
	handle := func(context.Context, pgx.Tx, *txinbox.Message) error { return nil }
	up, down := f.source(t, srv, "a", handle), f.source(t, srv, "b", handle)
	down.ready = errors.New("not connected")
	up.lag = []source.Lag{{Partition: "t/0", Messages: 7}}
	if err := srv.Add(server.Source{Name: "east", Scope: "a", Source: up}, server.Source{Name: "west", Scope: "b", Source: down}); err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	if code, body := get(h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"started":"not started or stopping"`) {
		t.Errorf("before Run: /readyz = %d %s, want 503 not started", code, body)
	}
	stop := start(t, srv)
	code, body := get(h, "/readyz")
	for _, want := range []string{`"database":"ok"`, `"started":"ok"`, `"east":"ok"`, `"west":"not connected"`} {
		if code != http.StatusServiceUnavailable || !strings.Contains(body, want) {
			t.Errorf("/readyz = %d %s; want 503 and %s", code, body, want)
		}
	}
	_, metrics := get(h, "/metrics")
	for _, want := range []string{"txinbox_ready 0", `txinbox_ready_check{check="west"} 0`, `txinbox_ready_check{check="east"} 1`,
		`txinbox_ready_check{check="database"} 1`, `txinbox_ready_check{check="started"} 1`} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("west not connected: /metrics has no %s", want)
		}
	}
	down.ready = nil
	if code, body := get(h, "/readyz"); code != http.StatusOK {
		t.Errorf("every source connected: /readyz = %d %s, want 200", code, body)
	}
	if _, metrics := get(h, "/metrics"); !strings.Contains(metrics, "txinbox_ready 1\n") ||
		!strings.Contains(metrics, `txinbox_ready_check{check="west"} 1`+"\n") {
		t.Errorf("every source connected: /metrics has no txinbox_ready 1 and west 1")
	}
	if _, body := get(h, "/metrics"); !strings.Contains(body, `txinbox_source_lag{partition="t/0",scope="a",source="east"} 7`) {
		t.Errorf("/metrics has no lag of east:\n%s", body)
	}
	if code, body := get(h, "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q, want 200 ok", code, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func get(h http.Handler, path string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// TestRetentionRefusal: a retention shorter than a source's horizon stops
// Run before anything runs, naming both figures; AcceptShortRetention
// starts all the same and logs the shortfall.
func TestRetentionRefusal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	week := source.Horizon{What: `Kafka topic "invoices"`, Figure: "retention.ms=604800000 (7d)", Within: 7 * 24 * time.Hour}
	for _, accept := range []bool{false, true} {
		var log strings.Builder
		srv, err := server.New(server.Config{Logger: slog.New(slog.NewTextHandler(&log, nil)), AcceptShortRetention: accept,
			Retention: server.Retention{Keep: 3 * 24 * time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		src := f.source(t, srv, "kafka", func(context.Context, pgx.Tx, *txinbox.Message) error { return nil })
		src.horizons = []source.Horizon{week}
		if err := srv.Add(server.Source{Name: "kafka", Scope: "kafka", Source: src}); err != nil {
			t.Fatal(err)
		}
		if !accept {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := srv.Run(ctx) // returns at once when refused, at the timeout when not
			cancel()
			var short *server.RetentionError
			if !errors.As(err, &short) || !strings.Contains(err.Error(),
				`retention 3d is shorter than retention.ms=604800000 (7d) of Kafka topic "invoices"`) {
				t.Errorf("Run: %v, want a RetentionError naming both figures", err)
			}
			continue
		}
		if err := start(t, srv)(); err != nil || !strings.Contains(log.String(), "accepted by Config.AcceptShortRetention") {
			t.Errorf("accepted: Run %v, log %q", err, log.String())
		}
	}
}

// TestSourceRetryWindow: a source's RetryWindow is checked beside its
// broker's horizons, also for a source that is no source.Horizoner: a
// retention shorter than the window is refused naming the window's
// figure, one that covers it passes.
func TestSourceRetryWindow(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	window := source.Horizon{What: `RabbitMQ queue "invoices"`, Figure: "--amqp-retry-window 7d", Within: 7 * 24 * time.Hour}
	for _, tc := range []struct {
		keep      time.Duration
		horizoner bool
		refused   bool
	}{{3 * 24 * time.Hour, true, true}, {3 * 24 * time.Hour, false, true}, {8 * 24 * time.Hour, true, false}, {8 * 24 * time.Hour, false, false}} {
		srv, err := server.New(server.Config{Logger: quiet(), Retention: server.Retention{Keep: tc.keep}})
		if err != nil {
			t.Fatal(err)
		}
		src := f.source(t, srv, "amqp", func(context.Context, pgx.Tx, *txinbox.Message) error { return nil })
		src.horizons = []source.Horizon{{What: "the broker", Figure: "2d", Within: 2 * 24 * time.Hour}}
		var s source.Source = src
		if !tc.horizoner {
			s = struct{ source.Source }{src} // Run only
		}
		if err := srv.Add(server.Source{Name: "amqp", Scope: "amqp", Source: s, RetryWindow: window}); err != nil {
			t.Fatal(err)
		}
		err = srv.CheckRetention(context.Background())
		var short *server.RetentionError
		switch {
		case tc.refused && (!errors.As(err, &short) || len(short.Shortfalls) != 1 || short.Shortfalls[0].Horizon != window):
			t.Errorf("retention %s, horizoner %v: %v, want a RetentionError of the retry window alone", tc.keep, tc.horizoner, err)
		case tc.refused && !strings.Contains(err.Error(), `is shorter than --amqp-retry-window 7d of RabbitMQ queue "invoices"`):
			t.Errorf("the refusal does not name the window's figure: %v", err)
		case !tc.refused && err != nil:
			t.Errorf("retention %s covers the window: %v", tc.keep, err)
		}
	}
}

// TestTwoSourcesOfOneKind: two sources with their own names and scopes
// over one inbox each process their messages; a name used twice is
// refused.
func TestTwoSourcesOfOneKind(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var progress strings.Builder
	srv, err := server.New(server.Config{Logger: quiet(), Progress: &progress, Purge: &purge.Config{}, Purger: f.driver})
	if err != nil {
		t.Fatal(err)
	}
	handle := func(context.Context, pgx.Tx, *txinbox.Message) error { return nil }
	east, west := f.source(t, srv, "east", handle), f.source(t, srv, "west", handle)
	if err := srv.Add(server.Source{Name: "east", Scope: "east", Source: east}, server.Source{Name: "west", Scope: "west", Source: west}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Add(server.Source{Name: "east", Scope: "other", Source: west}); err == nil || !strings.Contains(err.Error(), `named "east"`) {
		t.Errorf("a second source named east: %v, want refused", err)
	}
	stop := start(t, srv)
	for i, s := range []*chanSource{east, west, east} {
		s.in <- []*txinbox.Message{{ID: fmt.Sprint("m-", i), Payload: []byte("x")}}
	}
	waitFor(t, func() bool { return len(east.ackedIDs()) == 2 && len(west.ackedIDs()) == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if e, w := f.rows(t, "east"), f.rows(t, "west"); e != 2 || w != 1 {
		t.Errorf("rows east %d, west %d; want 2 and 1", e, w)
	}
	for _, want := range []string{"east source running, scope east", "west source running, scope west", "ready: east, west", "stopped"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress %q lacks %q", progress.String(), want)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// TestHandlersMounted: Config.Handlers are served beside /healthz; a
// pattern taken by the server is an error of New, not a panic.
func TestHandlersMounted(t *testing.T) {
	t.Parallel()
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "console "+r.URL.Path) })
	srv, err := server.New(server.Config{Logger: quiet(), Handlers: map[string]http.Handler{"/ui/": ui}})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get(srv.Handler(), "/ui/scopes"); code != 200 || body != "console /ui/scopes" {
		t.Errorf("/ui/scopes = %d %q", code, body)
	}
	if code, body := get(srv.Handler(), "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	_, err = server.New(server.Config{Handlers: map[string]http.Handler{"GET /healthz": ui}})
	if err == nil || !strings.Contains(err.Error(), `Config.Handlers["GET /healthz"]`) {
		t.Errorf("a handler on GET /healthz: %v, want an error naming it", err)
	}
}

// lines is a Progress writer that hands each line to a channel.
type lines chan string

func (l lines) Write(p []byte) (int, error) {
	for _, s := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l <- s
	}
	return len(p), nil
}

// TestEndpointAnswersTheRequestInFlight: a stop while an endpoint's
// request is in its handler lets the request be answered; the endpoint
// takes no new one.
func TestEndpointAnswersTheRequestInFlight(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "receipt")
	})
	progress := make(lines, 16)
	srv, err := server.New(server.Config{Logger: quiet(), Progress: progress, ShutdownTimeout: 20 * time.Second,
		Endpoints: []server.Endpoint{{Name: "as4", Listen: "127.0.0.1:0", Handler: h}}})
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, srv)
	var url string
	for url == "" {
		if rest, ok := strings.CutPrefix(<-progress, "as4 endpoint listening on "); ok {
			url = rest
		}
	}
	answer := make(chan string, 1)
	go func() {
		resp, err := http.Post(url, "text/plain", strings.NewReader("m"))
		if err != nil {
			answer <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answer <- string(b)
	}()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	waitFor(t, func() bool {
		checks, _ := srv.Ready(context.Background())
		return checks["started"] != "ok"
	})
	close(release)
	if got := <-answer; got != "receipt" {
		t.Errorf("the request in flight got %q, want its receipt", got)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := http.Post(url, "text/plain", strings.NewReader("m")); err == nil {
		t.Error("the endpoint took a request after the stop")
	}
}

// TestHealthzAnswersDuringTheRetentionCheck: while Run waits for a
// source's redelivery horizons, the operations listener already answers:
// /healthz 200, /readyz 503 naming the check. A shortfall found then
// still fails Run with a *RetentionError; a retention that covers the
// horizon makes the server ready.
func TestHealthzAnswersDuringTheRetentionCheck(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	week := source.Horizon{What: `Kafka topic "invoices"`, Figure: "retention.ms=604800000 (7d)", Within: 7 * 24 * time.Hour}
	for _, keep := range []time.Duration{3 * 24 * time.Hour, 30 * 24 * time.Hour} {
		progress := &syncBuffer{}
		srv, err := server.New(server.Config{Logger: quiet(), Progress: progress, HTTPListen: "127.0.0.1:0",
			Ping: f.pool.Ping, Retention: server.Retention{Keep: keep}})
		if err != nil {
			t.Fatal(err)
		}
		src := f.source(t, srv, "invoices", func(context.Context, pgx.Tx, *txinbox.Message) error { return nil })
		src.horizons, src.gate = []source.Horizon{week}, make(chan struct{})
		if err := srv.Add(server.Source{Name: "invoices", Scope: "invoices", Source: src}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Run(ctx) }()
		base := waitForMatch(t, progress, regexp.MustCompile(`health and metrics on (http://\S+)`))
		if code, body := httpGet(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
			t.Errorf("during the check: /healthz = %d %q, want 200 ok", code, body)
		}
		want := `"started":"starting: checking the retention against the invoices source (up to 30s)"`
		if code, body := httpGet(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, want) {
			t.Errorf("during the check: /readyz = %d %s, want 503 and %s", code, body, want)
		}
		if _, body := httpGet(t, base+"/metrics"); !strings.Contains(body, "txinbox_ready 0\n") ||
			!strings.Contains(body, `txinbox_ready_check{check="started"} 0`+"\n") {
			t.Errorf("during the check: /metrics has no txinbox_ready 0 and started 0")
		}
		close(src.gate)
		if keep < week.Within {
			var short *server.RetentionError
			if err := <-done; !errors.As(err, &short) {
				t.Errorf("a 3d retention against 7d: Run = %v, want a *RetentionError", err)
			}
			cancel()
			continue
		}
		deadline := time.Now().Add(10 * time.Second)
		for code, body := httpGet(t, base+"/readyz"); code != http.StatusOK; code, body = httpGet(t, base+"/readyz") {
			if time.Now().After(deadline) {
				t.Fatalf("after the check: /readyz = %d %s, want 200", code, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// syncBuffer is a writer (a Progress writer, a logger's) the test reads
// while the server's goroutines write to it.
type syncBuffer = testkit.SyncBuffer

// waitForMatch returns the first group of re's first match in b, waiting
// up to 10s.
func waitForMatch(t *testing.T, b *syncBuffer, re *regexp.Regexp) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(b.String()); m != nil {
			return m[1]
		}
	}
	t.Fatalf("no %s in the progress lines within 10s", re)
	return ""
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}
