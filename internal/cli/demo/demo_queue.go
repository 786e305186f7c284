package demo

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// The runner shared by the broker demos (--source kafka, nats, sqs and
// rabbitmq): the parent publishes the plan to the broker (re-sends are new
// messages with the event's id), runs consumer child processes
// ("demo-consumer-kafka", ...) one at a time and SIGKILLs them at the
// demo's crash points. A child reports each committed outcome as a
// demoReply line and announces a crash point with demoReply.At.

// queueBroker is what the shared runner needs of a broker.
type queueBroker interface {
	// publish sends the stream: message i is event stream[i].
	publish(ctx context.Context, ids, payloads []string, stream []int) error
	// pending counts the messages not acked yet; exact is false when
	// messages held unacked by a live consumer may be missing from the
	// count (RabbitMQ counts ready messages only, over AMQP).
	pending(ctx context.Context) (n int, exact bool, err error)
	// childArgs are the child command and its broker flags.
	childArgs() []string
	// where describes the broker for the summary.
	where() string
	close()
}

// queueDemo is the parent's state over a queue demo run.
type queueDemo struct {
	o       Options
	env     *clikit.Env
	rng     *rand.Rand
	b       queueBroker
	sum     *demoSummary
	crashes int
	acked   int // outcomes reported by the children
	// effects counts the events whose effect committed, for brokers
	// whose pending count is not exact while a consumer runs.
	effects *demoBroker
}

// runQueueDemo runs the demo through the broker that open starts for the
// run.
func runQueueDemo(ctx context.Context, env *clikit.Env, o Options, open func(ctx context.Context, run string) (queueBroker, error)) (*demoSummary, error) {
	start := time.Now()
	if o.Sabotage == SabotageAckFirst {
		return nil, fmt.Errorf("--sabotage %s is not available with --source %s (use %s)", SabotageAckFirst, o.Source, SabotageDeliveryKey)
	}
	db, err := clikit.OpenDB(ctx, o.DB, 2)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if err := db.Admin.Migrate(ctx); err != nil {
		return nil, fmt.Errorf("migrating %s: %w", db.Where, err)
	}
	if err := createDemoTables(ctx, db); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed>>1|1))
	run := strconv.FormatUint(o.Seed%1_000_000_007, 36)
	ids, payloads, stream := demoPlan(o, run, rng)
	b, err := open(ctx, run)
	if err != nil {
		return nil, err
	}
	defer b.close()
	d := &queueDemo{o: o, env: env, rng: rng, b: b, effects: &demoBroker{db: db, run: run},
		sum: &demoSummary{Source: o.Source, DB: db.Kind, Where: db.Where + ", " + b.where(), Run: run,
			Published: len(stream), Unique: len(ids), Resent: len(stream) - len(ids), CrashPoints: map[string]int{}}}
	if err := b.publish(ctx, ids, payloads, stream); err != nil {
		return nil, fmt.Errorf("publishing: %w", err)
	}
	if err := d.consumeAll(ctx); err != nil {
		return nil, err
	}
	if err := (&demoBroker{ids: ids, sum: d.sum}).verify(ctx, db, run); err != nil {
		return nil, err
	}
	d.sum.Redelivered = max(0, d.acked-d.sum.Published)
	d.sum.ElapsedMS = time.Since(start).Milliseconds()
	return d.sum, nil
}

// consumeAll runs consumer children until the broker holds nothing
// unacked with no consumer running.
func (d *queueDemo) consumeAll(ctx context.Context) error {
	for {
		left, err := d.settledPending(ctx)
		if err != nil {
			return fmt.Errorf("counting the pending messages: %w", err)
		}
		if left == 0 {
			d.progressDone()
			return nil
		}
		if err := d.runConsumer(ctx, left); err != nil {
			return err
		}
	}
}

// settledPending waits until the broker's count is exact (a killed
// consumer's messages are back in the queue), then returns it.
func (d *queueDemo) settledPending(ctx context.Context) (int, error) {
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		n, exact, err := d.b.pending(ctx)
		if err != nil || exact {
			return n, err
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the broker still sees a consumer 30s after the last one stopped")
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// nextCrash picks where the next child dies, spreading the crashes over
// the run so that each planned one happens ("" when none is left).
func (d *queueDemo) nextCrash(ctx context.Context, left int) (point string, after int, err error) {
	todo := d.o.Crashes - d.crashes
	if todo <= 0 {
		return "", 0, nil
	}
	point = []string{crashAfterEffect, crashAfterCommit, crashRandom}[d.crashes%3]
	work := left
	if point == crashAfterEffect {
		// The handler runs for new events only: count those not committed
		// yet, so that the child surely reaches the point.
		done, err := d.effects.committed(ctx)
		if err != nil {
			return "", 0, err
		}
		work = d.o.Messages - done
	}
	if work < 3*todo {
		point = crashRandom
	}
	per := max(1, work/(todo+1))
	return point, 1 + d.rng.IntN(per), nil
}

func (d *queueDemo) childArgs(point string, after int) []string {
	args := append(d.b.childArgs(), "--db", d.o.DB.URL, "--table-prefix", d.o.DB.Prefix)
	if d.o.DB.Schema != "" {
		args = append(args, "--schema", d.o.DB.Schema)
	}
	if d.o.Sabotage != "" {
		args = append(args, "--sabotage", d.o.Sabotage)
	}
	if point == crashAfterEffect || point == crashAfterCommit {
		args = append(args, "--crash-point", point, "--crash-after", strconv.Itoa(after))
	}
	return args
}

// queueChild is one consumer child process.
type queueChild struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  clikit.TailBuffer
	replies chan demoReply
	killed  bool
}

func (d *queueDemo) startChild(point string, after int) (*queueChild, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ch := &queueChild{cmd: exec.Command(self, d.childArgs(point, after)...), replies: make(chan demoReply, 1024)}
	ch.cmd.Stderr = &ch.stderr
	if ch.stdin, err = ch.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := ch.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := ch.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the consumer: %w", err)
	}
	go readReplies(stdout, ch.replies)
	return ch, nil
}

// runConsumer runs one child until it is killed at its crash point, or the
// broker holds nothing pending (then it is asked to leave, or killed if
// its random crash is still due).
func (d *queueDemo) runConsumer(ctx context.Context, left int) error {
	point, after, err := d.nextCrash(ctx, left)
	if err != nil {
		return err
	}
	ch, err := d.startChild(point, after)
	if err != nil {
		return err
	}
	kill := func(at string) {
		if !ch.killed {
			ch.killed = true
			ch.cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck // it may be gone already
			d.crashes++
			d.sum.Crashes++
			d.sum.CrashPoints[at]++
		}
	}
	killAt := -1
	if point == crashRandom {
		killAt = d.acked + after
	}
	watchErr := d.watch(ctx, ch, killAt, kill)
	waitErr := waitChild(ch, demoStallTimeout)
	if watchErr != nil {
		return watchErr
	}
	if !ch.killed && waitErr != nil {
		return fmt.Errorf("consumer failed: %v: %s", waitErr, ch.stderr.String())
	}
	return nil
}

// waitChild waits for a child that was killed or asked to leave; one still
// running after limit is killed and reported with its log.
func waitChild(ch *queueChild, limit time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- ch.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		ch.cmd.Process.Kill() //nolint:errcheck // it may be gone already
		<-done
		ch.killed = false // not a planned crash: report it
		return fmt.Errorf("did not exit within %s of being asked to leave", limit)
	}
}

// demoStallTimeout is how long a consumer may report nothing while the
// broker holds messages before the demo gives up with its log.
var demoStallTimeout = 90 * time.Second

// watch follows a child's replies and the broker's pending count. A
// random-moment crash is armed once killAt outcomes were reported and
// fires a random fraction of a few milliseconds later.
func (d *queueDemo) watch(ctx context.Context, ch *queueChild, killAt int, kill func(string)) error {
	var timer <-chan time.Time
	check := time.NewTicker(50 * time.Millisecond)
	defer check.Stop()
	defer ch.stdin.Close()
	stall := newStallWatch(time.Now())
	for {
		select {
		case r, ok := <-ch.replies:
			if !ok {
				return nil // the child exited
			}
			stall.reply(r, time.Now())
			if r.At != "" {
				kill(r.At)
				continue
			}
			d.count(r)
			if killAt >= 0 && d.acked >= killAt && timer == nil {
				timer = time.After(time.Duration(d.rng.IntN(3000)) * time.Microsecond)
			}
		case <-timer:
			kill(crashRandom)
		case <-check.C:
			d.progress()
			if done, err := d.finished(ctx, killAt, kill); done || err != nil {
				return err
			}
			if since, stalled := stall.stalled(time.Now()); stalled {
				// Messages are pending and the consumer acknowledges nothing:
				// say so with its log instead of waiting for ever.
				ch.cmd.Process.Kill() //nolint:errcheck // it may be gone already
				left, _, _ := d.b.pending(ctx)
				return fmt.Errorf("no progress for %s: %s still holds %d messages and the consumer handled none%s; its log:\n%s",
					since.Round(time.Second), d.b.where(), left, stall.refusals(), ch.stderr.String())
			}
		case <-ctx.Done():
			kill("interrupted")
			return ctx.Err()
		}
	}
}

// finished reports whether the broker holds nothing pending; a random
// crash still due then happens now, as in the memory demo.
func (d *queueDemo) finished(ctx context.Context, killAt int, kill func(string)) (bool, error) {
	if ctx.Err() != nil {
		return false, nil // the caller's select sees it
	}
	left, exact, err := d.b.pending(ctx)
	if err != nil || left > 0 {
		return false, err
	}
	if !exact {
		// Unacked messages may remain: call it done when every event's
		// effect committed (what is left are duplicates); if not, the
		// next consumer takes what this one leaves.
		done, err := d.effects.committed(ctx)
		if err != nil || done < d.sum.Unique {
			return false, err
		}
	}
	if killAt >= 0 {
		kill(crashRandom)
	}
	return true, nil // the deferred stdin close asks a live child to leave
}

func (d *queueDemo) count(r demoReply) {
	switch r.Outcome {
	case "processed":
		d.sum.Processed++
	case "duplicate", "drift":
		d.sum.DuplicatesSkipped++
	}
	if r.Outcome != "" {
		d.acked++
	}
}

func (d *queueDemo) progress() {
	if d.env.IsTerminal && !d.o.JSON {
		fmt.Fprintf(d.env.Stderr, "\rdemo: %d/%d messages processed, %d/%d crashes ", d.acked, d.sum.Published, d.crashes, d.o.Crashes)
	}
}

func (d *queueDemo) progressDone() {
	if d.env.IsTerminal && !d.o.JSON {
		fmt.Fprint(d.env.Stderr, "\r\033[K")
	}
}

// queueChildFlags are the flags every queue demo child takes.
type queueChildFlags struct {
	dbf      clikit.DBFlags
	point    string
	after    int
	sabotage string
}

func (f *queueChildFlags) register(fs *flag.FlagSet, env *clikit.Env) {
	f.dbf.Register(fs, env)
	fs.StringVar(&f.point, "crash-point", "", "stop at this crash point and wait to be killed")
	clikit.IntFlag(fs, &f.after, "crash-after", 0, 0, "reach the crash point after this many messages")
	fs.StringVar(&f.sabotage, "sabotage", "", "break the consumer on purpose (see demo --sabotage)")
}

// runQueueChild runs a child command: it opens the database and calls
// consume until stdin closes (the parent asks it to leave) or it is
// killed.
func runQueueChild(ctx context.Context, env *clikit.Env, f *queueChildFlags, name string, consume func(ctx context.Context, c *demoConsumer, db *clikit.InboxDB) error) int {
	db, err := clikit.OpenDB(ctx, f.dbf, 4)
	if err != nil {
		fmt.Fprintln(env.Stderr, name+":", err)
		return clikit.ExitFailure
	}
	defer db.Close()
	c := &demoConsumer{out: json.NewEncoder(env.Stdout), point: f.point, after: f.after, sabotage: f.sabotage,
		log: slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})), stderr: env.Stderr}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		io.Copy(io.Discard, env.Stdin) //nolint:errcheck // EOF or error: leave either way
		cancel()
	}()
	if err := consume(ctx, c, db); err != nil {
		fmt.Fprintln(env.Stderr, name+":", err)
		return clikit.ExitFailure
	}
	return clikit.ExitOK
}

// queueInboxConfig is the processor configuration of a demo child: the
// invoice handler and the hook that reports outcomes.
func queueInboxConfig[TTx any](c *demoConsumer, exec clikit.TxExecFunc[TTx]) txinbox.Config[TTx] {
	return txinbox.Config[TTx]{Scope: demoScope, Handler: queueInvoiceHandler(c, exec),
		Hooks: []txinbox.Hook{&queueDemoHook{c: c}}, Logger: c.log}
}

// queueInvoiceHandler applies an InvoiceIssued event: a partner_invoices
// row and an outbox row, as the memory demo's handler does.
func queueInvoiceHandler[TTx any](c *demoConsumer, exec clikit.TxExecFunc[TTx]) txinbox.HandlerFunc[TTx] {
	var handled atomic.Int64
	return func(ctx context.Context, tx TTx, m *txinbox.Message) error {
		var inv demoInvoice
		if err := json.Unmarshal(m.Payload, &inv); err != nil {
			return txinbox.Permanent(fmt.Errorf("payload is not an InvoiceIssued event: %w", err))
		}
		if err := exec(ctx, tx, `INSERT INTO partner_invoices (message_id, invoice_no, partner, amount_cents, run_id)
			VALUES ($1, $2, $3, $4, $5)`, eventID(inv), inv.InvoiceNo, inv.Partner, inv.AmountCents, inv.Run); err != nil {
			return err
		}
		if err := exec(ctx, tx, `INSERT INTO outbox (message_id, topic, payload) VALUES ($1, $2, $3)`,
			eventID(inv), "invoic."+inv.Partner, string(m.Payload)); err != nil {
			return err
		}
		if c.point == crashAfterEffect && handled.Add(1) >= int64(c.after) {
			c.stopHere(crashAfterEffect)
		}
		return nil
	}
}

// eventID is the event's own id, also under the delivery-key sabotage (so
// that the independent count sees the double effects).
func eventID(inv demoInvoice) string {
	var n int
	fmt.Sscanf(inv.InvoiceNo[len(inv.InvoiceNo)-6:], "%d", &n) //nolint:errcheck // the plan's format
	return fmt.Sprintf("InvoiceIssued/%s/%06d", inv.Run, n)
}

// queueDemoHook reports each committed outcome to the parent and stops at
// the after-commit crash point at the end of a batch: its transaction
// committed, its acks not yet sent (hooks run inside Process, before the
// source acks).
type queueDemoHook struct {
	c        *demoConsumer
	mu       sync.Mutex
	seen     int
	batchEnd int
}

// OnBatch notes where the committed batch's outcomes end.
func (h *queueDemoHook) OnBatch(_ context.Context, info txinbox.BatchInfo) {
	if info.Err == nil {
		h.mu.Lock()
		h.batchEnd = h.seen + info.Size
		h.mu.Unlock()
	}
}

// OnOutcome reports one outcome.
func (h *queueDemoHook) OnOutcome(_ context.Context, _ *txinbox.Message, res txinbox.Result) {
	h.c.reply(demoReply{Outcome: res.Outcome.String()})
	h.mu.Lock()
	h.seen++
	stop := h.c.point == crashAfterCommit && h.seen >= h.c.after && h.seen == h.batchEnd
	h.mu.Unlock()
	if stop {
		h.c.stopHere(crashAfterCommit)
	}
}
