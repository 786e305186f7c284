package cli

import (
	"context"
	"encoding/json"
	"errors"
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

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/store"
)

// The Kafka demo: the parent process runs an embedded kfake cluster of
// three brokers, publishes the plan to a topic (re-sends at new offsets,
// with the event id in the message-id header) and runs consumer child
// processes ("demo-consumer-kafka") of one consumer group, one at a time,
// SIGKILLing them at the demo's crash points. A child reports each
// committed outcome as a demoReply line and announces a crash point with
// demoReply.At.

func init() {
	demoSources["kafka"] = runDemoKafka
	register("demo-consumer-kafka", "", runDemoConsumerKafka)
}

const (
	demoKafkaPartitions = 4
	demoKafkaHeader     = "message-id"
	// demoKafkaSession is the children's session timeout: a SIGKILLed
	// child leaves the group this long after its death.
	demoKafkaSession = 600 * time.Millisecond
)

// kafkaDemo is the parent's state over the run.
type kafkaDemo struct {
	o       demoOptions
	env     *Env
	rng     *rand.Rand
	seeds   []string
	topic   string
	adm     *kadm.Client
	sum     *demoSummary
	crashes int
	acked   int // outcomes reported by the children
}

func runDemoKafka(ctx context.Context, env *Env, o demoOptions) (*demoSummary, error) {
	if o.sabotage == sabotageAckFirst {
		// The Kafka consumer has no way to commit offsets before its
		// transactions; that is the point of it.
		return nil, fmt.Errorf("--sabotage %s is not available with --source kafka (use %s)", sabotageAckFirst, sabotageDeliveryKey)
	}
	start := time.Now()
	db, err := openKafkaDemoDB(ctx, o)
	if err != nil {
		return nil, err
	}
	defer db.close()
	rng := rand.New(rand.NewPCG(o.seed, o.seed>>1|1))
	run := strconv.FormatUint(o.seed%1_000_000_007, 36)
	ids, payloads, stream := demoPlan(o, run, rng)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("starting the kfake cluster: %w", err)
	}
	defer cluster.Close()
	// A topic per run: the partitions' watermarks in the inbox database
	// belong to their topic, and a new cluster's offsets start at 0.
	d := &kafkaDemo{o: o, env: env, rng: rng, seeds: cluster.ListenAddrs(), topic: "invoices-" + run,
		sum: &demoSummary{Source: o.source, DB: db.kind, Where: db.where + ", kfake 3 brokers", Run: run,
			Published: len(stream), Unique: len(ids), Resent: len(stream) - len(ids), CrashPoints: map[string]int{}}}
	err = d.publish(ctx, ids, payloads, stream)
	if d.adm != nil {
		defer d.adm.Close()
	}
	if err != nil {
		return nil, err
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

// openKafkaDemoDB opens the inbox database, migrated, with the demo's
// tables.
func openKafkaDemoDB(ctx context.Context, o demoOptions) (*inboxDB, error) {
	db, err := openDB(ctx, o.dbf, 2)
	if err != nil {
		return nil, err
	}
	if err := db.admin.Migrate(ctx); err != nil {
		db.close()
		return nil, fmt.Errorf("migrating %s: %w", db.where, err)
	}
	if err := createDemoTables(ctx, db); err != nil {
		db.close()
		return nil, err
	}
	return db, nil
}

// publish creates the topic and produces the stream; an event's re-send
// lands on the event's partition (keyed by its id) at a new offset.
func (d *kafkaDemo) publish(ctx context.Context, ids, payloads []string, stream []int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.seeds...))
	if err != nil {
		return err
	}
	d.adm = kadm.NewClient(cl)
	if _, err := d.adm.CreateTopic(ctx, demoKafkaPartitions, -1, nil, d.topic); err != nil {
		return fmt.Errorf("creating topic %s: %w", d.topic, err)
	}
	recs := make([]*kgo.Record, len(stream))
	for i, m := range stream {
		recs[i] = &kgo.Record{Topic: d.topic, Key: []byte(ids[m]), Value: []byte(payloads[m]),
			Headers: []kgo.RecordHeader{{Key: demoKafkaHeader, Value: []byte(ids[m])}}}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("publishing to %s: %w", d.topic, err)
	}
	return nil
}

// consumeAll runs consumer children until the group committed every
// offset.
func (d *kafkaDemo) consumeAll(ctx context.Context) error {
	for {
		lag, err := d.lag(ctx)
		if err != nil {
			return err
		}
		if lag == 0 {
			d.progressDone()
			return nil
		}
		if err := d.runConsumer(ctx, lag); err != nil {
			return err
		}
	}
}

// lag is the records not yet committed by the group, over all partitions.
func (d *kafkaDemo) lag(ctx context.Context) (int64, error) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ends, err := d.adm.ListEndOffsets(lctx, d.topic)
	if err != nil {
		return 0, fmt.Errorf("listing the end offsets: %w", err)
	}
	committed, err := d.adm.FetchOffsets(lctx, demoScope)
	if errors.Is(err, kerr.GroupIDNotFound) {
		err = nil // nothing committed yet
	}
	if err != nil {
		return 0, fmt.Errorf("fetching the group's offsets: %w", err)
	}
	var lag int64
	ends.Each(func(o kadm.ListedOffset) {
		c, _ := committed.Lookup(d.topic, o.Partition)
		lag += o.Offset - max(c.At, 0)
	})
	return lag, nil
}

// nextCrash picks where the next child dies, spreading the crashes over
// the run so that each planned one happens ("" when none is left).
func (d *kafkaDemo) nextCrash(lag int64) (point string, after int) {
	left := d.o.crashes - d.crashes
	if left <= 0 {
		return "", 0
	}
	point = []string{crashAfterEffect, crashAfterCommit, crashRandom}[d.crashes%3]
	work := int(lag)
	if point == crashAfterEffect {
		work = d.o.messages - d.sum.Processed // the handler runs for new events only
	}
	if work < 3*left {
		point = crashRandom
	}
	per := max(1, work/(left+1))
	return point, 1 + d.rng.IntN(per)
}

func (d *kafkaDemo) childArgs(point string, after int) []string {
	args := []string{"demo-consumer-kafka", "--db", d.o.dbf.url, "--table-prefix", d.o.dbf.prefix,
		"--seeds", d.seeds[0], "--topic", d.topic}
	if d.o.dbf.schema != "" {
		args = append(args, "--schema", d.o.dbf.schema)
	}
	if point == crashAfterEffect || point == crashAfterCommit {
		args = append(args, "--crash-point", point, "--crash-after", strconv.Itoa(after))
	}
	if d.o.sabotage != "" {
		args = append(args, "--sabotage", d.o.sabotage)
	}
	return args
}

// kafkaChild is one consumer child process.
type kafkaChild struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  tailBuffer
	replies chan demoReply
	killed  bool
}

func (d *kafkaDemo) startChild(point string, after int) (*kafkaChild, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ch := &kafkaChild{cmd: exec.Command(self, d.childArgs(point, after)...), replies: make(chan demoReply, 1024)}
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
// group has committed everything (then it is asked to leave, or killed if
// its random crash is still due).
func (d *kafkaDemo) runConsumer(ctx context.Context, lag int64) error {
	point, after := d.nextCrash(lag)
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
	waitErr := ch.cmd.Wait()
	if watchErr != nil {
		return watchErr
	}
	if !ch.killed && waitErr != nil {
		return fmt.Errorf("consumer failed: %v: %s", waitErr, ch.stderr.String())
	}
	return nil
}

// watch follows a child's replies and the group's lag. A random-moment
// crash is armed once killAt outcomes were reported and fires a random
// fraction of a millisecond later.
func (d *kafkaDemo) watch(ctx context.Context, ch *kafkaChild, killAt int, kill func(string)) error {
	var timer <-chan time.Time
	check := time.NewTicker(50 * time.Millisecond)
	defer check.Stop()
	defer ch.stdin.Close()
	for {
		select {
		case r, ok := <-ch.replies:
			if !ok {
				return nil // the child exited
			}
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
		case <-ctx.Done():
			kill("interrupted")
			return ctx.Err()
		}
	}
}

// finished reports whether the group committed everything; a random crash
// still due then happens now, as in the memory demo.
func (d *kafkaDemo) finished(ctx context.Context, killAt int, kill func(string)) (bool, error) {
	if ctx.Err() != nil {
		return false, nil // the caller's select sees it
	}
	lag, err := d.lag(ctx)
	if err != nil || lag > 0 {
		return false, err
	}
	if killAt >= 0 {
		kill(crashRandom)
	}
	return true, nil // the deferred stdin close asks a live child to leave
}

func (d *kafkaDemo) count(r demoReply) {
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

func (d *kafkaDemo) progress() {
	if d.env.IsTerminal && !d.o.json {
		fmt.Fprintf(d.env.Stderr, "\rdemo: %d/%d records processed, %d/%d crashes ", d.acked, d.sum.Published, d.crashes, d.o.crashes)
	}
}

func (d *kafkaDemo) progressDone() {
	if d.env.IsTerminal && !d.o.json {
		fmt.Fprint(d.env.Stderr, "\r\033[K")
	}
}

// runDemoConsumerKafka is the hidden child command: one member of the
// demo's consumer group, until its stdin closes or it is killed.
func runDemoConsumerKafka(ctx context.Context, env *Env, args []string) int {
	fs := flag.NewFlagSet("demo-consumer-kafka", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var dbf dbFlags
	dbf.register(fs, env)
	seeds := fs.String("seeds", "", "a broker of the cluster")
	topic := fs.String("topic", "", "the topic to consume")
	point := fs.String("crash-point", "", "stop at this crash point and wait to be killed")
	after := fs.Int("crash-after", 0, "reach the crash point after this many messages")
	sabotage := fs.String("sabotage", "", "key on the offset ("+sabotageDeliveryKey+"), not the message id")
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	db, err := openDB(ctx, dbf, 4)
	if err != nil {
		fmt.Fprintln(env.Stderr, "demo-consumer-kafka:", err)
		return ExitFailure
	}
	defer db.close()
	c := &demoConsumer{out: json.NewEncoder(env.Stdout), point: *point, after: *after, sabotage: *sabotage}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		io.Copy(io.Discard, env.Stdin) //nolint:errcheck // EOF or error: leave either way
		cancel()
	}()
	if db.pg != nil {
		err = consumeKafka(ctx, c, db.pg, pgTxExec, *seeds, *topic)
	} else {
		err = consumeKafka(ctx, c, db.lite, sqlTxExec, *seeds, *topic)
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, "demo-consumer-kafka:", err)
		return ExitFailure
	}
	return ExitOK
}

func consumeKafka[TTx any](ctx context.Context, c *demoConsumer, d store.Driver[TTx], exec txExecFunc[TTx], seeds, topic string) error {
	quiet := slog.New(slog.DiscardHandler)
	key := kafka.HeaderKey(demoKafkaHeader)
	if c.sabotage == sabotageDeliveryKey {
		key = kafka.OffsetKey // a producer's re-send is a new record: applied twice
	}
	consumer, err := kafka.New(d, kafka.Config[TTx]{
		Seeds: []string{seeds}, Topics: []string{topic}, Group: demoScope,
		Key: key,
		// One partition at a time: kafkaDemoHook finds the end of a batch
		// by counting outcomes, which batches in parallel would interleave.
		Concurrency: 1,
		Inbox: txinbox.Config[TTx]{
			Handler: kafkaInvoiceHandler(c, exec),
			Hooks:   []txinbox.Hook{&kafkaDemoHook{c: c}},
			Logger:  quiet,
		},
		// kfake expires a member whose JoinGroup waits longer than its
		// session timeout (and leaves the join unanswered until the request
		// times out): the rebalance timeout stays below the session.
		ClientOptions: []kgo.Opt{kgo.SessionTimeout(demoKafkaSession), kgo.HeartbeatInterval(demoKafkaSession / 10),
			kgo.RebalanceTimeout(demoKafkaSession * 2 / 3), kgo.FetchMaxWait(100 * time.Millisecond)},
		Logger: quiet,
	})
	if err != nil {
		return err
	}
	return consumer.Run(ctx)
}

// kafkaInvoiceHandler applies an InvoiceIssued event: a partner_invoices
// row and an outbox row. It repeats the few lines of the memory demo's
// handler (a closure inside consume in demo_consumer.go), with a counter
// safe for partitions handled in parallel.
func kafkaInvoiceHandler[TTx any](c *demoConsumer, exec txExecFunc[TTx]) txinbox.HandlerFunc[TTx] {
	var handled atomic.Int64
	return func(ctx context.Context, tx TTx, m *txinbox.Message) error {
		var inv demoInvoice
		if err := json.Unmarshal(m.Payload, &inv); err != nil {
			return txinbox.Permanent(fmt.Errorf("payload is not an InvoiceIssued event: %w", err))
		}
		id := m.Header(demoKafkaHeader) // the event's own id, also under the delivery-key sabotage
		if err := exec(ctx, tx, `INSERT INTO partner_invoices (message_id, invoice_no, partner, amount_cents, run_id)
			VALUES ($1, $2, $3, $4, $5)`, id, inv.InvoiceNo, inv.Partner, inv.AmountCents, inv.Run); err != nil {
			return err
		}
		if err := exec(ctx, tx, `INSERT INTO outbox (message_id, topic, payload) VALUES ($1, $2, $3)`,
			id, "invoic."+inv.Partner, string(m.Payload)); err != nil {
			return err
		}
		if c.point == crashAfterEffect && handled.Add(1) >= int64(c.after) {
			c.stopHere(crashAfterEffect)
		}
		return nil
	}
}

// kafkaDemoHook reports each committed outcome to the parent and stops at
// the after-commit crash point at the end of a batch: its transaction
// committed, its offsets not yet (the hooks run inside Process, before the
// consumer commits offsets).
type kafkaDemoHook struct {
	c        *demoConsumer
	mu       sync.Mutex
	seen     int
	batchEnd int
}

// OnBatch notes where the committed batch's outcomes end.
func (h *kafkaDemoHook) OnBatch(_ context.Context, info txinbox.BatchInfo) {
	if info.Err == nil {
		h.mu.Lock()
		h.batchEnd = h.seen + info.Size
		h.mu.Unlock()
	}
}

// OnOutcome reports one outcome.
func (h *kafkaDemoHook) OnOutcome(_ context.Context, _ *txinbox.Message, res txinbox.Result) {
	h.c.reply(demoReply{Outcome: res.Outcome.String()})
	h.mu.Lock()
	h.seen++
	stop := h.c.point == crashAfterCommit && h.seen >= h.c.after && h.seen == h.batchEnd
	h.mu.Unlock()
	if stop {
		h.c.stopHere(crashAfterCommit)
	}
}
