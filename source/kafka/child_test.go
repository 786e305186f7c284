package kafka_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/internal/testkit"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/store/pgstore"
)

// envChild carries a childSpec: the test binary started with it runs one
// consumer process (the re-exec pattern of store/storetest).
const envChild = "TXINBOX_KAFKA_TEST_CHILD"

// crashLine is what a child prints when it reached its crash point: its
// batch committed in the database, its offsets not yet committed.
const crashLine = "at-crash-point"

type childSpec struct {
	Seeds            []string      `json:"seeds"`
	Topic            string        `json:"topic"`
	Group            string        `json:"group"`
	Schema           string        `json:"schema"`
	SessionTimeout   time.Duration `json:"session_timeout"`
	ServerSide       bool          `json:"server_side"`        // KIP-848's consumer protocol
	CrashAfterCommit int           `json:"crash_after_commit"` // 0: none
	OffsetKey        bool          `json:"offset_key"`         // key on the offset, not the header
	Watermark        bool          `json:"watermark"`          // offsets as the inbox (OffsetWatermark)
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(envChild); spec != "" {
		if err := runChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, "kafka test child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// envLog turns on the consumers' and the clients' logs on stderr.
const envLog = "TXINBOX_KAFKA_TEST_LOG"

func quietLogger() *slog.Logger {
	if os.Getenv(envLog) != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// crashHook stops the child after its batches committed n records, before
// the consumer commits their offsets: OnOutcome runs right after the
// commit, inside Process.
type crashHook struct {
	mu   sync.Mutex
	n    int
	seen int
}

func (h *crashHook) OnOutcome(context.Context, *txinbox.Message, txinbox.Result) {
	h.mu.Lock()
	h.seen++
	hit := h.n > 0 && h.seen == h.n
	h.mu.Unlock()
	if hit {
		fmt.Println(crashLine)
		select {} // wait for SIGKILL
	}
}

func runChild(specJSON string) error {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	cfg, err := pgxpool.ParseConfig(testdb.URL())
	if err != nil {
		return err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = spec.Schema
	cfg.ConnConfig.RuntimeParams["application_name"] = childAppName(spec.Schema)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		return err
	}
	f := &fixture{c: &cluster{seeds: spec.Seeds, session: spec.SessionTimeout, serverSide: spec.ServerSide}, topic: spec.Topic, group: spec.Group}
	kc := f.consumerConfig()
	kc.Inbox.Hooks = []txinbox.Hook{&crashHook{n: spec.CrashAfterCommit}}
	if spec.OffsetKey {
		kc.Key = kafka.OffsetKey
	}
	if spec.Watermark {
		kc.Key = kafka.OffsetWatermark
	}
	consumer, err := newConsumer(d, kc)
	if err != nil {
		return err
	}
	// The parent stops a child gracefully by closing its stdin.
	rctx, cancel := context.WithCancel(ctx)
	go func() {
		io.Copy(io.Discard, os.Stdin) //nolint:errcheck // EOF or error: stop either way
		cancel()
	}()
	return consumer.Run(rctx)
}

// child is a consumer process of the test binary.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	done  chan struct{}
	err   error
	out   syncBuffer // stderr
}

// startChildSpec starts a child with the fixture's cluster, topic, group
// and schema and spec's other fields.
func (f *fixture) startChildSpec(spec childSpec) *child {
	f.t.Helper()
	spec.Seeds, spec.Topic, spec.Group, spec.Schema, spec.SessionTimeout = f.c.seeds, f.topic, f.group, f.schema, f.c.session
	spec.ServerSide = f.c.serverSide
	specJSON, _ := json.Marshal(spec)
	ch := &child{cmd: exec.Command(os.Args[0], "-test.run=^$"), lines: make(chan string, 16), done: make(chan struct{})}
	ch.cmd.Env = append(os.Environ(), envChild+"="+string(specJSON))
	ch.cmd.Stderr = &ch.out
	stdout, err := ch.cmd.StdoutPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	if ch.stdin, err = ch.cmd.StdinPipe(); err != nil {
		f.t.Fatal(err)
	}
	if err := ch.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case ch.lines <- sc.Text():
			default:
			}
		}
		ch.err = ch.cmd.Wait()
		close(ch.done)
	}()
	f.t.Cleanup(func() {
		ch.kill()
		if f.t.Failed() && os.Getenv(envLog) != "" {
			f.t.Logf("child log: %s", ch.out.String())
		}
	})
	return ch
}

// kill SIGKILLs the child and waits for it to be gone.
// childAppName is the application_name of a child's database sessions.
func childAppName(schema string) string { return "kafka-child " + schema }

// waitChildSessionsGone waits until the database has ended the sessions of
// the fixture's SIGKILLed children: a COMMIT a child sent before it died
// has then landed, and the effects are final.
func (f *fixture) waitChildSessionsGone() {
	f.t.Helper()
	waitFor(f.t, 10*time.Second, "the killed child's database sessions gone", func() (bool, string) {
		var n int
		err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`,
			childAppName(f.schema)).Scan(&n)
		if err != nil {
			return false, err.Error()
		}
		return n == 0, fmt.Sprintf("%d sessions", n)
	})
}

func (ch *child) kill() {
	ch.cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck // it may be gone already
	<-ch.done
}

// stop asks the child to leave the group and waits for its exit.
func (ch *child) stop(t testing.TB) {
	t.Helper()
	ch.stdin.Close()
	t0 := time.Now()
	defer func() {
		if time.Since(t0) > 5*time.Second {
			t.Logf("slow stop (%s): %s", time.Since(t0), ch.out.String())
		}
	}()
	select {
	case <-ch.done:
		if ch.err != nil {
			t.Errorf("child exited with %v: %s", ch.err, ch.out.String())
		}
	case <-time.After(30 * time.Second):
		t.Errorf("child did not stop: %s", ch.out.String())
		ch.kill()
	}
}

// waitCrashPoint waits until the child reached its crash point.
func (ch *child) waitCrashPoint(t testing.TB, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l := <-ch.lines:
			if l == crashLine {
				return
			}
		case <-ch.done:
			t.Fatalf("child exited before its crash point: %v: %s", ch.err, ch.out.String())
		case <-deadline:
			t.Fatalf("child did not reach its crash point in %s: %s", timeout, ch.out.String())
		}
	}
}

// syncBuffer is a child's stderr, read while the child writes it.
type syncBuffer = testkit.SyncBuffer
