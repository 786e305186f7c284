//go:build unix

package serve_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox/internal/amqptest"
	"github.com/txinbox/txinbox/internal/testdb"
)

// failoverDetection is how long the test leaves the pair without a
// primary before it promotes the standby: a failover manager's detection
// time, short here (Patroni's default TTL is 30 s).
const failoverDetection = 2 * time.Second

// TestServeFailover: serve (the binary) consumes Kafka (kfake) and
// RabbitMQ (a quorum queue) at load over a primary and a hot standby
// reached through a multi-host URL with target_session_attrs=read-write;
// the primary is SIGKILLed (the postmaster and every backend), the
// standby promoted after failoverDetection, and serve carries on by
// itself. While there is no primary nothing is acked and no offset is
// committed; no attempt is counted against any message and none is
// dead-lettered. The test counts the broker-confirmed ids against the
// effect rows on the new primary: with synchronous replication none is
// doubled and none lost; with asynchronous replication none is doubled
// and the acked messages whose effect the failover lost are counted and
// logged. The time from the kill to the first commit on the new primary
// is logged ("failover ...:" lines; docs/operations.md).
func TestServeFailover(t *testing.T) {
	t.Parallel()
	amqpURL := amqptest.Require(t)
	for _, tc := range []struct {
		name string
		sync bool
	}{{"sync", true}, {"async", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runFailover(t, amqpURL, tc.sync)
		})
	}
}

// failoverRun is one failover's state: the pair, the brokers, serve.
type failoverRun struct {
	t     *testing.T
	pair  *testdb.ReplicaPair
	queue string
	// amqpURL is the RabbitMQ the queue is on.
	amqpURL string
	adm     *kadm.Client
	serve   *serveProc
	kafka   *confirmedIDs
	amqp    *confirmedIDs
}

func runFailover(t *testing.T, amqpURL string, synchronous bool) {
	r := &failoverRun{t: t, pair: testdb.StartReplicaPair(t, synchronous), kafka: &confirmedIDs{}, amqp: &confirmedIDs{}}
	mode := map[bool]string{true: "sync", false: "async"}[synchronous]
	if err := r.exec(r.pair.Primary.URL(), `CREATE TABLE effects (scope text, id text, deliveries int,
		port int DEFAULT inet_server_port(), at timestamptz DEFAULT clock_timestamp())`); err != nil {
		t.Fatal(err)
	}
	seeds, cl := startKafka(t, map[string]string{"orders": ""})
	r.adm = kadm.NewClient(cl)
	r.queue, r.amqpURL = quorumQueue(t, amqpURL), amqpURL
	args := []string{"--db", r.pair.URL(), "--no-purge", "--http-listen", "127.0.0.1:0",
		"--kafka-brokers", seeds, "--kafka-topics", "orders", "--kafka-group", "failover", "--kafka-key", "header:message-id",
		"--amqp-url", amqpURL, "--amqp-queue", r.queue,
		"--effect", "sql", "--effect-sql", `INSERT INTO effects (scope, id, deliveries) VALUES ($1, $3,
			(SELECT (h->>'value')::int FROM jsonb_array_elements($8::jsonb) h WHERE h->>'key' = 'txinbox-delivery-count'))`}
	if !synchronous {
		args = append(args, durabilityRiskFlag(t)...)
	}
	r.serve = startServeBin(t, nil, args...)

	ctx, stopLoad := context.WithCancel(context.Background())
	var load sync.WaitGroup
	load.Go(func() { publishKafka(ctx, t, cl, r.kafka) })
	load.Go(func() { publishAMQP(ctx, t, amqpURL, r.queue, r.amqp) })
	defer func() { stopLoad(); load.Wait() }()
	waitFor(t, "effects of both sources on the primary", func() bool {
		return r.effects(r.pair.Primary.URL(), "kafka") >= 300 && r.effects(r.pair.Primary.URL(), "amqp") >= 300
	})

	killed := time.Now()
	if err := r.pair.Primary.Kill(); err != nil {
		t.Fatal(err)
	}
	r.checkOutage()
	promoting := time.Now()
	if err := r.pair.Standby.Promote(); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	var first time.Time
	waitFor(t, "a commit on the new primary", func() bool {
		err := r.queryRow(r.pair.Standby.URL(), `SELECT coalesce(min(at), 'epoch') FROM effects WHERE port = $1`,
			[]any{r.pair.Standby.Port()}, &first)
		return err == nil && first.After(killed)
	})
	// The load goes on a little on the new primary.
	time.Sleep(2 * time.Second)
	stopLoad()
	load.Wait()
	r.drain()
	t.Logf("failover (%s): primary SIGKILLed; promotion started %v later (the detection delay) and took %v; "+
		"first commit on the new primary %v after the kill (%v after the promotion returned)", mode,
		promoting.Sub(killed).Round(time.Millisecond), promoted.Sub(promoting).Round(time.Millisecond),
		first.Sub(killed).Round(time.Millisecond), first.Sub(promoted).Round(time.Millisecond))
	r.count(mode, synchronous)
	if t.Failed() {
		t.Logf("primary killed at %s; serve's log:\n%s", killed.Format("15:04:05.000"), r.serve.stderr)
	}
}

// checkOutage watches the first failoverDetection without a primary:
// serve stays up, /readyz fails on the database, and neither broker sees
// an ack or an offset commit (a batch that committed just before the kill
// may still be acked in the first half second).
func (r *failoverRun) checkOutage() {
	t := r.t
	time.Sleep(500 * time.Millisecond)
	offsets, acked := r.kafkaCommitted(), r.serve.metricSum("txinbox_acked_messages_total", `source="`+r.queue+`"`)
	time.Sleep(failoverDetection - 500*time.Millisecond)
	if r.serve.exited() {
		t.Fatalf("serve exited without a primary:\n%s", r.serve.stderr)
	}
	if code, body := r.serve.get("/readyz"); code == 200 || strings.Contains(body, `"database":"ok"`) {
		t.Errorf("/readyz without a primary = %d %q, want a failure of the database", code, body)
	}
	if now := r.kafkaCommitted(); now != offsets {
		t.Errorf("Kafka offsets committed without a primary: %d, then %d", offsets, now)
	}
	if now := r.serve.metricSum("txinbox_acked_messages_total", `source="`+r.queue+`"`); now != acked {
		t.Errorf("RabbitMQ deliveries acked without a primary: %v, then %v", acked, now)
	}
}

// drain waits until every Kafka record's offset is committed and every
// confirmed RabbitMQ message acked, then stops serve (SIGTERM: exit 0)
// and checks that the queue is empty.
func (r *failoverRun) drain() {
	t := r.t
	end, err := r.adm.ListEndOffsets(context.Background(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	var ends int64
	end.Each(func(o kadm.ListedOffset) { ends += o.Offset })
	waitFor(t, "every record and delivery acked after the failover", func() bool {
		return r.kafkaCommitted() == ends && r.queueDepth() == 0 &&
			r.serve.metricSum("txinbox_acked_messages_total", `source="`+r.queue+`"`) >= float64(r.amqp.sent())
	})
	if code, _ := r.serve.signal(syscall.SIGTERM); code != 0 {
		t.Errorf("SIGTERM after the failover: exit %d:\n%s", code, r.serve.stderr)
	}
	if n := r.queueDepth(); n != 0 {
		t.Errorf("%d RabbitMQ messages left in the queue once serve stopped", n)
	}
}

// count compares the confirmed ids with the effect rows on the new
// primary, and checks that nothing was dead-lettered or had an attempt
// counted.
func (r *failoverRun) count(mode string, synchronous bool) {
	t := r.t
	var lostIDs []string
	published, doubled, lost := 0, 0, 0
	for scope, ids := range map[string]*confirmedIDs{"kafka": r.kafka, "amqp": r.amqp} {
		rows := map[string]int{}
		var id string
		var n int
		if err := r.forEach(r.pair.Standby.URL(), `SELECT id, count(*) FROM effects WHERE scope = $1 GROUP BY id`,
			[]any{scope}, []any{&id, &n}, func() { rows[id] = n }); err != nil {
			t.Fatal(err)
		}
		for id := range ids.set() {
			published++
			switch rows[id] {
			case 0:
				lost++
				lostIDs = append(lostIDs, scope+"/"+id)
			case 1:
			default:
				doubled++
				t.Errorf("%s %s: %d effects", scope, id, rows[id])
			}
		}
	}
	var deadLetters, attempts, deliveries int
	if err := r.queryRow(r.pair.Standby.URL(), `SELECT (SELECT count(*) FROM txinbox_dead_letters), (SELECT count(*) FROM txinbox_attempts),
		(SELECT coalesce(max(deliveries), 0) FROM effects WHERE scope = 'amqp')`, nil, &deadLetters, &attempts, &deliveries); err != nil {
		t.Fatal(err)
	}
	t.Logf("failover (%s): %d ids confirmed by the brokers (%d Kafka, %d RabbitMQ, some sent twice); effects on the new primary: "+
		"%d doubled, %d lost (acked, no effect)%s; %d dead letters, %d attempts counted; the most deliveries of one RabbitMQ message: %d",
		mode, published, r.kafka.sent(), r.amqp.sent(), doubled, lost, sample(lostIDs), deadLetters, attempts, deliveries)
	if synchronous && lost > 0 {
		t.Errorf("synchronous replication lost %d acked messages: %v", lost, sample(lostIDs))
	}
	if deadLetters != 0 || attempts != 0 {
		t.Errorf("the failover was blamed on messages: %d dead letters, %d attempts counted", deadLetters, attempts)
	}
}

// sample is the first ids of a list, for a log line.
func sample(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return fmt.Sprintf(" %v", ids[:min(len(ids), 10)])
}

// kafkaCommitted is the sum of the group's committed offsets of orders.
func (r *failoverRun) kafkaCommitted() int64 {
	offsets, err := r.adm.FetchOffsets(context.Background(), "failover")
	if err != nil {
		r.t.Fatal(err)
	}
	var sum int64
	offsets.Each(func(o kadm.OffsetResponse) { sum += o.At })
	return sum
}

// queueDepth is the queue's ready messages.
func (r *failoverRun) queueDepth() int {
	conn, err := amqp091.Dial(r.amqpURL)
	if err != nil {
		r.t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		r.t.Fatal(err)
	}
	q, err := ch.QueueDeclarePassive(r.queue, true, false, false, false, amqp091.Table{"x-queue-type": "quorum"})
	if err != nil {
		r.t.Fatal(err)
	}
	return q.Messages
}

// effects counts the effect rows of scope on the cluster at url, -1 when
// it does not answer.
func (r *failoverRun) effects(url, scope string) int {
	var n int
	if err := r.queryRow(url, `SELECT count(*) FROM effects WHERE scope = $1`, []any{scope}, &n); err != nil {
		return -1
	}
	return n
}

func (r *failoverRun) exec(url, sql string) error {
	return r.forEach(url, sql, nil, nil, nil)
}

func (r *failoverRun) queryRow(url, sql string, args []any, dest ...any) error {
	return r.forEach(url, sql, args, dest, func() {})
}

// forEach runs sql on one connection to url; with fn, it scans each row
// into dest and calls fn.
func (r *failoverRun) forEach(url, sql string, args, dest []any, fn func()) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx) //nolint:errcheck // read only
	if fn == nil {
		_, err := conn.Exec(ctx, sql, args...)
		return err
	}
	rows, _ := conn.Query(ctx, sql, args...)
	_, err = pgx.ForEachRow(rows, dest, func() error { fn(); return nil })
	return err
}

// confirmedIDs are the ids a broker confirmed (safe for concurrent use).
type confirmedIDs struct {
	mu  sync.Mutex
	ids map[string]bool
	n   int // confirmed publishes, repeats included
}

func (c *confirmedIDs) add(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil {
		c.ids = map[string]bool{}
	}
	c.ids[id] = true
	c.n++
}

func (c *confirmedIDs) sent() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *confirmedIDs) set() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids
}

// loadTick is the pace of each publisher: about 500 messages a second
// each; one in ten sends an earlier id again.
const loadTick = 2 * time.Millisecond

// loadID is the id of the n-th publish: every tenth repeats one sent five
// publishes earlier.
func loadID(prefix string, n int) string {
	if n%10 == 9 {
		n -= 5
	}
	return fmt.Sprintf("%s-%d", prefix, n)
}

// publishKafka produces records with a message-id header until ctx ends,
// and records those the broker acknowledged.
func publishKafka(ctx context.Context, t *testing.T, cl *kgo.Client, ids *confirmedIDs) {
	tick := time.NewTicker(loadTick)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			if err := cl.Flush(context.Background()); err != nil {
				t.Error(err)
			}
			return
		case <-tick.C:
		}
		id := loadID("k", n)
		cl.Produce(context.Background(), &kgo.Record{Topic: "orders", Key: []byte(id), Value: []byte(id),
			Headers: []kgo.RecordHeader{{Key: "message-id", Value: []byte(id)}}}, func(_ *kgo.Record, err error) {
			if err == nil {
				ids.add(id)
			}
		})
	}
}

// publishAMQP publishes persistent messages with a MessageId until ctx
// ends, and records those the broker confirmed.
func publishAMQP(ctx context.Context, t *testing.T, url, queue string, ids *confirmedIDs) {
	conn, err := amqp091.Dial(url)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err == nil {
		err = ch.Confirm(false)
	}
	if err != nil {
		t.Error(err)
		return
	}
	type sent struct {
		id string
		dc *amqp091.DeferredConfirmation
	}
	var pending []sent
	tick := time.NewTicker(loadTick)
	defer tick.Stop()
	for n := 0; ctx.Err() == nil; n++ {
		select {
		case <-ctx.Done():
			continue
		case <-tick.C:
		}
		id := loadID("a", n)
		dc, err := ch.PublishWithDeferredConfirmWithContext(context.Background(), "", queue, false, false,
			amqp091.Publishing{MessageId: id, DeliveryMode: amqp091.Persistent, Body: []byte(id)})
		if err != nil {
			t.Error(err)
			return
		}
		pending = append(pending, sent{id, dc})
	}
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range pending {
		if ok, err := s.dc.WaitContext(wctx); ok && err == nil {
			ids.add(s.id)
		}
	}
}

// quorumQueue declares a quorum queue of a name of its own (quorum
// queues count deliveries exactly: the MaxDeliveries guard sees each
// redelivery), deleted at cleanup.
func quorumQueue(t *testing.T, url string) string {
	t.Helper()
	name := fmt.Sprintf("txinbox-failover-%d", time.Now().UnixNano())
	conn, err := amqp091.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err == nil {
		_, err = ch.QueueDeclare(name, true, false, false, false, amqp091.Table{"x-queue-type": "quorum"})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.QueueDelete(name, false, false, false) }) //nolint:errcheck // best effort
	return name
}

// durabilityRiskFlag is --accept-durability-risk when serve knows it (it
// refuses, without it, a database that can lose acknowledged messages,
// such as one whose standby is asynchronous), else nothing.
func durabilityRiskFlag(t *testing.T) []string {
	t.Helper()
	out, errs, _ := runBinEnv(t, nil, "serve", "-h")
	if strings.Contains(out+errs, "--accept-durability-risk") {
		return []string{"--accept-durability-risk"}
	}
	return nil
}

// metricSum sums the samples of /metrics named name whose labels contain
// label.
func (p *serveProc) metricSum(name, label string) float64 {
	p.t.Helper()
	_, body := p.get("/metrics")
	var sum float64
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, name+"{") && strings.Contains(line, label) {
			var v float64
			fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v) //nolint:errcheck // a sample
			sum += v
		}
	}
	return sum
}
