package serve_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/txinbox/txinbox/internal/cli/clitest"
	"github.com/txinbox/txinbox/internal/testdb"
)

// serveProc is the built txinbox binary running serve.
type serveProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	lines  chan string
	stderr *syncBuffer
	done   chan struct{}
	code   int
	// opsURL and as4URL are read from the start lines.
	opsURL, as4URL string
}

// startServeBin starts the binary with args and waits for its "ready:"
// line. extraEnv is added to the environment, from which TXINBOX_* is
// removed.
func startServeBin(t *testing.T, extraEnv []string, args ...string) *serveProc {
	t.Helper()
	p := &serveProc{t: t, lines: make(chan string, 4096), stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(clitest.Bin(), append([]string{"serve"}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TXINBOX_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, extraEnv...)
	// The start lines are logged: read them from stderr, kept whole too.
	out, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.stderr.Write(append(sc.Bytes(), '\n')) //nolint:errcheck // a buffer
			select {
			case p.lines <- progressText(sc.Text()):
			default:
			}
		}
		err := p.cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.code = ee.ExitCode() // -1 when a signal killed it
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill() //nolint:errcheck // it may have exited
		<-p.done
	})
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case line := <-p.lines:
			if rest, ok := strings.CutPrefix(line, "health and metrics on "); ok {
				p.opsURL, _, _ = strings.Cut(rest, " ")
			}
			if u, ok := strings.CutPrefix(line, "as4 endpoint listening on "); ok {
				p.as4URL = u
			}
			if strings.HasPrefix(line, "ready: ") {
				return p
			}
		case <-p.done:
			t.Fatalf("serve exited %d before it was ready:\n%s", p.code, p.stderr)
		case <-deadline:
			t.Fatalf("serve not ready within 2 minutes:\n%s", p.stderr)
		}
	}
}

// signal sends sig and returns the exit code, and the log lines after
// it.
func (p *serveProc) signal(sig os.Signal) (int, []string) {
	p.t.Helper()
	p.send(sig)
	return p.wait(time.Minute, sig.String())
}

// send sends sig and returns at once.
func (p *serveProc) send(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// exited reports whether the process has ended.
func (p *serveProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to d for the process to end (after what, for the failure
// message) and returns its exit code, -1 when a signal ended it, and the
// log lines not read yet (a start or stop line as its text: progressText).
func (p *serveProc) wait(d time.Duration, after string) (int, []string) {
	p.t.Helper()
	var lines []string
	deadline := time.After(d)
	for {
		select {
		case line := <-p.lines:
			lines = append(lines, line)
		case <-p.done:
			for {
				select {
				case line := <-p.lines:
					lines = append(lines, line)
				default:
					return p.code, lines
				}
			}
		case <-deadline:
			p.t.Fatalf("serve did not exit within %s of %s:\n%s", d, after, p.stderr)
		}
	}
}

// get fetches an ops path.
func (p *serveProc) get(path string) (int, string) {
	p.t.Helper()
	resp, err := http.Get(p.opsURL + path)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric returns the value of one sample of /metrics, -1 if absent.
func (p *serveProc) metric(sample string) float64 {
	p.t.Helper()
	_, body := p.get("/metrics")
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// waitFor polls cond until it holds, for up to a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startNATS runs nats-server with JetStream in the test process and creates
// the stream ORDERS on orders.>.
func startNATS(t *testing.T) (string, natsjs.JetStream) {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(context.Background(), natsjs.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	return srv.ClientURL(), js
}

// publishOrders publishes ids order-0 .. order-(n-1), then re-sends the
// first dups of them, with the id in the header message-id (not
// Nats-Msg-Id, which JetStream would deduplicate itself).
func publishOrders(t *testing.T, js natsjs.JetStream, n, dups int) {
	t.Helper()
	for i := range n + dups {
		id := i % n
		m := nats.NewMsg("orders.new")
		m.Data = []byte(fmt.Sprintf(`{"order":%d}`, id))
		m.Header.Set("message-id", "order-"+strconv.Itoa(id))
		if _, err := js.PublishMsgAsync(m); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		t.Fatal("publishes not acknowledged")
	}
}

// effectsTable creates the table the --effect sql statements write: one
// row per effect, no unique key, so a double effect shows as two rows.
func effectsTable(t *testing.T, pool *pgxpool.Pool, schema string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(),
		`CREATE TABLE `+schema+`.effects (scope text, id text, source text, payload bytea, detail text)`); err != nil {
		t.Fatal(err)
	}
}

// effectCounts returns the effect rows and the distinct (scope, id) among
// them, for scope.
func effectCounts(t *testing.T, pool *pgxpool.Pool, schema, scope string) (rows, distinct int) {
	t.Helper()
	err := pool.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT id) FROM `+schema+`.effects WHERE scope = $1`, scope).
		Scan(&rows, &distinct)
	if err != nil {
		t.Fatal(err)
	}
	return rows, distinct
}

func consumerPending(t *testing.T, js natsjs.JetStream, name string) (pending uint64, ackPending int) {
	t.Helper()
	c, err := js.Consumer(context.Background(), "ORDERS", name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.NumPending, info.NumAckPending
}

// TestServeBinaryConfigFile: the built binary, configured by a YAML file
// with an AS4 endpoint and a NATS JetStream source over PostgreSQL, runs
// one effect per message id whatever the redeliveries, shows it on
// /healthz, /readyz and /metrics, and on SIGTERM exits 0 with every
// message committed once and acked.
func TestServeBinaryConfigFile(t *testing.T) {
	t.Parallel()
	pool := testdb.Require(t)
	schema := testdb.NewSchema(t, pool)
	effectsTable(t, pool, schema)
	natsURL, js := startNATS(t)
	const orders, resent = 40, 10
	publishOrders(t, js, orders, resent)
	cfg := filepath.Join(t.TempDir(), "txinbox.yaml")
	yaml := fmt.Sprintf(`db: %q
schema: %s
as4-listen: 127.0.0.1:0
http-listen: 127.0.0.1:0
log-format: json
no-purge: true
nats-url: %s
nats-stream: ORDERS
nats-consumer: billing
nats-key: header:message-id
effect: sql
effect-sql:
  - >-
    INSERT INTO %s.effects (scope, id, source, payload, detail)
    VALUES ($1, $2, $4, $9, concat_ws(' ', $3::text, $5::text, $6::text, $7::text, $8::text))
`, testdb.URL(), schema, natsURL, schema)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServeBin(t, nil, "--config", cfg)
	if code, body := p.get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	waitFor(t, "the NATS messages", func() bool {
		rows, _ := effectCounts(t, pool, schema, "nats")
		return rows >= orders && p.metric(`txinbox_duplicates_total{scope="nats",source="ORDERS"}`) == resent
	})
	postReceipt(t, p.as4URL)
	postReceipt(t, p.as4URL)
	if code, body := p.get("/readyz"); code != 200 || !strings.Contains(body, `"nats":"ok"`) || !strings.Contains(body, `"database":"ok"`) {
		t.Errorf("/readyz = %d %q", code, body)
	}
	for sample, want := range map[string]float64{
		`txinbox_messages_total{outcome="processed",scope="nats",source="ORDERS"}`: orders,
		`txinbox_messages_total{outcome="duplicate",scope="nats",source="ORDERS"}`: resent,
		`txinbox_messages_total{outcome="processed",scope="as4",source="as4"}`:     1,
		`txinbox_duplicates_total{scope="as4",source="as4"}`:                       1,
		`txinbox_source_lag{partition="",scope="nats",source="nats"}`:              0,
	} {
		if got := p.metric(sample); got != want {
			t.Errorf("%s = %v, want %v", sample, got, want)
		}
	}
	// The inbox gauges are read at most every 15 s: wait for a fresh one.
	waitFor(t, "the inbox gauges", func() bool { return p.metric(`txinbox_inbox_rows`) == orders+1 })
	if exp, lag := p.metric(`txinbox_inbox_expired_rows`), p.metric(`txinbox_inbox_oldest_expired_age_seconds`); exp != 0 || lag != 0 {
		t.Errorf("expired rows %v, purge lag %v s; want 0 and 0", exp, lag)
	}
	code, lines := p.signal(syscall.SIGTERM)
	if code != 0 || !slices.Contains(lines, "stopped") {
		t.Fatalf("SIGTERM: exit %d, log lines %q:\n%s", code, lines, p.stderr)
	}
	if rows, distinct := effectCounts(t, pool, schema, "nats"); rows != orders || distinct != orders {
		t.Errorf("NATS effects: %d rows, %d ids; want %d of each", rows, distinct, orders)
	}
	if rows, distinct := effectCounts(t, pool, schema, "as4"); rows != 1 || distinct != 1 {
		t.Errorf("AS4 effects: %d rows, %d ids; want 1", rows, distinct)
	}
	var inbox int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM `+schema+`.txinbox_inbox WHERE scope = 'nats'`).Scan(&inbox); err != nil {
		t.Fatal(err)
	}
	if pending, ackPending := consumerPending(t, js, "billing"); inbox != orders || pending != 0 || ackPending != 0 {
		t.Errorf("inbox rows %d (want %d); consumer pending %d, waiting for an ack %d (want 0, 0)", inbox, orders, pending, ackPending)
	}
}

// TestServeBinarySIGKILLRestart: serve is SIGKILLed in the middle of a
// stream, then started again; in the end every message has exactly one
// effect (nothing lost, nothing doubled) and everything is acked.
func TestServeBinarySIGKILLRestart(t *testing.T) {
	t.Parallel()
	serveSIGKILLRestart(t, testdb.URL())
}

// TestServeBinarySIGKILLRestartDatabaseSQL is the same on the
// database/sql store (txinbox_store=database/sql in --db: pgdbstore).
func TestServeBinarySIGKILLRestartDatabaseSQL(t *testing.T) {
	t.Parallel()
	url := testdb.URL()
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	serveSIGKILLRestart(t, url+sep+"txinbox_store=database/sql")
}

func serveSIGKILLRestart(t *testing.T, dbURL string) {
	pool := testdb.Require(t)
	schema := testdb.NewSchema(t, pool)
	effectsTable(t, pool, schema)
	natsURL, js := startNATS(t)
	const orders, resent = 800, 100
	publishOrders(t, js, orders, resent)
	args := []string{"--db", dbURL, "--schema", schema, "--no-purge", "--nats-url", natsURL, "--nats-stream", "ORDERS",
		"--nats-consumer", "restart", "--nats-key", "header:message-id", "--nats-ack-wait", "1s", "--effect", "sql",
		// The sleep makes each batch of 100 take about half a second, so
		// that the kill lands in the middle of the stream.
		"--effect-sql", "INSERT INTO " + schema + ".effects (scope, id, source, payload, detail) " +
			"VALUES ($1, $2, $4, $9, concat_ws(' ', $3::text, $5::text, $6::text, $7::text, $8::text))",
		"--effect-sql", "SELECT pg_sleep(0.005)"}
	// A SIGTERM in the middle of the stream: exit 0, and every effect
	// committed has its inbox row. (That alone would also hold if the
	// batch in flight were rolled back; TestServeSIGTERMDrainsBatchInFlight
	// proves it commits and is acked.)
	p := startServeBin(t, nil, args...)
	waitFor(t, "the first effects", func() bool {
		rows, _ := effectCounts(t, pool, schema, "nats")
		return rows >= 100
	})
	if code, _ := p.signal(syscall.SIGTERM); code != 0 || strings.Contains(p.stderr.String(), "cut") {
		t.Fatalf("SIGTERM mid-stream: exit %d:\n%s", code, p.stderr)
	}
	var inbox int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM `+schema+`.txinbox_inbox`).Scan(&inbox); err != nil {
		t.Fatal(err)
	}
	if rows, distinct := effectCounts(t, pool, schema, "nats"); rows != inbox || distinct != inbox {
		t.Fatalf("after the SIGTERM: %d effect rows, %d ids, %d inbox rows", rows, distinct, inbox)
	}
	termAt := inbox
	p = startServeBin(t, nil, args...)
	waitFor(t, "more effects", func() bool {
		rows, _ := effectCounts(t, pool, schema, "nats")
		return rows >= termAt+100
	})
	if code, _ := p.signal(syscall.SIGKILL); code != -1 {
		t.Fatalf("SIGKILL: exit %d", code)
	}
	killedAt, _ := effectCounts(t, pool, schema, "nats")
	t.Logf("SIGTERM at %d effects, SIGKILL at %d, of %d", termAt, killedAt, orders)
	p = startServeBin(t, nil, args...)
	waitFor(t, "every message after the restart", func() bool {
		_, distinct := effectCounts(t, pool, schema, "nats")
		pending, ackPending := consumerPending(t, js, "restart")
		return distinct == orders && pending == 0 && ackPending == 0
	})
	if code, _ := p.signal(syscall.SIGTERM); code != 0 {
		t.Errorf("SIGTERM after the restart: exit %d:\n%s", code, p.stderr)
	}
	if rows, distinct := effectCounts(t, pool, schema, "nats"); rows != orders || distinct != orders {
		t.Errorf("after a SIGKILL at %d effects and a restart: %d rows, %d ids; want %d of each", killedAt, rows, distinct, orders)
	}
}

// runBinEnv runs the binary to its end with extraEnv added to an
// environment without TXINBOX_* variables.
func runBinEnv(t *testing.T, extraEnv []string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, clitest.Bin(), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TXINBOX_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, extraEnv...)
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errb.String(), 0
	case errors.As(err, &ee) && ctx.Err() == nil:
		return out.String(), errb.String(), ee.ExitCode()
	}
	t.Fatalf("txinbox %v: %v\n%s", args, err, errb.String())
	return "", "", 0
}
