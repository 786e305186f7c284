package sqs_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/source/internal/runtest"
	"github.com/txinbox/txinbox/source/sqs"
	"github.com/txinbox/txinbox/source/sqs/sqsfake"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

func TestConfigErrorsNameTheField(t *testing.T) {
	proc := runtest.ConfigProcessor(t)
	cl := client("http://127.0.0.1:1")
	for _, tc := range []struct {
		cfg   sqs.Config
		field string
	}{
		{sqs.Config{QueueURL: "q"}, "Client"},
		{sqs.Config{Client: cl}, "QueueURL"},
		{sqs.Config{Client: cl, QueueURL: "q", DeadLetterQueueURL: "q"}, "DeadLetterQueueURL"},
		{sqs.Config{Client: cl, QueueURL: "q", WaitTime: 21 * time.Second}, "WaitTime"},
		{sqs.Config{Client: cl, QueueURL: "q", VisibilityTimeout: time.Second}, "VisibilityTimeout"},
		{sqs.Config{Client: cl, QueueURL: "q", MaxDeliveries: -1}, "MaxDeliveries"},
	} {
		_, err := sqs.New(proc, tc.cfg)
		var ce *txinbox.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("New(%+v) = %v, want a ConfigError on %s", tc.cfg, err, tc.field)
		}
	}
}

// queueFixture is a queue on a fake of its own, and an inbox.
type queueFixture struct {
	t        *testing.T
	fake     *sqsfake.Server
	cl       *awssqs.Client
	queueURL string
	pool     *pgxpool.Pool
	driver   *pgstore.Driver
}

func newQueueFixture(t *testing.T) *queueFixture {
	t.Helper()
	admin := testdb.Require(t)
	pool := testdb.PoolIn(t, testdb.NewSchema(t, admin), 4)
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE effects (message_id text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	f := &queueFixture{t: t, fake: sqsfake.NewServer(), pool: pool, driver: d}
	t.Cleanup(f.fake.Close)
	f.cl = awssqs.New(awssqs.Options{BaseEndpoint: aws.String(f.fake.URL()), Region: "us-east-1", Credentials: sqsfake.Credentials})
	out, err := f.cl.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String("invoices")})
	if err != nil {
		t.Fatal(err)
	}
	f.queueURL = *out.QueueUrl
	return f
}

func (f *queueFixture) send(body string) {
	f.t.Helper()
	if _, err := f.cl.SendMessage(context.Background(), &awssqs.SendMessageInput{QueueUrl: &f.queueURL, MessageBody: &body}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *queueFixture) config(h txinbox.HandlerFunc[pgx.Tx]) config {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	return config{Config: sqs.Config{Client: f.cl, QueueURL: f.queueURL, WaitTime: time.Second, VisibilityTimeout: 2 * time.Second,
		Logger: quiet},
		Inbox: txinbox.Config[pgx.Tx]{Scope: "sqs-test", Handler: h, Logger: quiet}}
}

// config is a consumer's Config and its processor's.
type config struct {
	sqs.Config
	Inbox txinbox.Config[pgx.Tx]
}

func insertEffect(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
	_, err := tx.Exec(ctx, `INSERT INTO effects (message_id) VALUES ($1)`, m.ID)
	return err
}

// run runs consumers with cfgs until done holds for the sum of their
// stats, then stops them.
func (f *queueFixture) run(done func(sqs.Stats) bool, cfgs ...config) []*sqs.Consumer {
	f.t.Helper()
	var cs []*sqs.Consumer
	var runs []func(context.Context) error
	for _, cfg := range cfgs {
		c, err := sqs.New(runtest.Processor(f.t, f.driver, cfg.Inbox), cfg.Config)
		if err != nil {
			f.t.Fatal(err)
		}
		cs = append(cs, c)
		runs = append(runs, c.Run)
	}
	total := func() sqs.Stats {
		var t sqs.Stats
		for _, c := range cs {
			s := c.Stats()
			t.Processed, t.Duplicates, t.Deleted = t.Processed+s.Processed, t.Duplicates+s.Duplicates, t.Deleted+s.Deleted
		}
		return t
	}
	runtest.Until(f.t, total, done, runs...)
	return cs
}

func (f *queueFixture) effects() int {
	f.t.Helper()
	var n int
	if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM effects`).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *queueFixture) wantEmpty() {
	f.t.Helper()
	out, err := f.cl.GetQueueAttributes(context.Background(), &awssqs.GetQueueAttributesInput{QueueUrl: &f.queueURL,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		f.t.Fatal(err)
	}
	if a := out.Attributes; a["ApproximateNumberOfMessages"] != "0" || a["ApproximateNumberOfMessagesNotVisible"] != "0" {
		f.t.Errorf("queue not empty: %v", a)
	}
}

// A batch that runs longer than the visibility timeout keeps its messages
// invisible: a second consumer never receives them meanwhile.
func TestLongBatchStaysInvisible(t *testing.T) {
	t.Parallel()
	f := newQueueFixture(t)
	f.send(`{"invoice":"INV-1"}`)
	var receiveCount string
	slow := func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error {
		receiveCount = m.Header(sqs.ReceiveCountHeader)
		select { // the partner's endpoint takes 3s, longer than the 2s visibility timeout
		case <-time.After(3 * time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
		return insertEffect(ctx, tx, m)
	}
	cs := f.run(func(s sqs.Stats) bool { return s.Deleted == 1 }, f.config(slow), f.config(slow))
	a, b := cs[0].Stats(), cs[1].Stats()
	if a.Processed+b.Processed != 1 || a.Duplicates+b.Duplicates != 0 || a.Extensions+b.Extensions == 0 {
		t.Errorf("consumers %+v and %+v: want one processed, extended, never received by the other", a, b)
	}
	if receiveCount != "1" || f.effects() != 1 {
		t.Errorf("receive count %q, effects %d: want 1 and 1", receiveCount, f.effects())
	}
	f.wantEmpty()
}

// A delete that fails after the commit leaves the message in the queue:
// it comes back and is skipped as a duplicate.
func TestFailedDeleteComesBackAsDuplicate(t *testing.T) {
	t.Parallel()
	f := newQueueFixture(t)
	f.send(`{"invoice":"INV-2"}`)
	f.fake.FailNext("DeleteMessageBatch", 3) // the SDK tries three times
	cs := f.run(func(s sqs.Stats) bool { return s.Deleted == 1 }, f.config(insertEffect))
	if s := cs[0].Stats(); s.Processed != 1 || s.Duplicates != 1 || s.DeleteErrors != 1 {
		t.Errorf("stats %+v: want processed 1, duplicates 1, delete errors 1", s)
	}
	if n := f.effects(); n != 1 {
		t.Errorf("%d effects, want 1", n)
	}
	f.wantEmpty()
}

// A message received more than MaxDeliveries times (its consumers kept
// dying on it) is dead-lettered without running the handler.
func TestMaxDeliveriesDeadLetters(t *testing.T) {
	t.Parallel()
	f := newQueueFixture(t)
	f.send(`{"invoice":"INV-3"}`)
	for range 2 { // two consumers received it and died
		out, err := f.cl.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{QueueUrl: &f.queueURL})
		if err != nil || len(out.Messages) != 1 {
			t.Fatal(out, err)
		}
		if _, err := f.cl.ChangeMessageVisibility(context.Background(), &awssqs.ChangeMessageVisibilityInput{
			QueueUrl: &f.queueURL, ReceiptHandle: out.Messages[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := f.config(insertEffect)
	cfg.MaxDeliveries = 2
	cs := f.run(func(s sqs.Stats) bool { return s.Deleted == 1 }, cfg)
	if s := cs[0].Stats(); s.DeadLettered != 1 || f.effects() != 0 {
		t.Errorf("stats %+v, effects %d: want dead-lettered without effect", s, f.effects())
	}
	dls, err := f.driver.ListDeadLetters(context.Background(), store.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 1 || !strings.Contains(dls[0].LastError, "received 3 times, more than MaxDeliveries (2)") {
		t.Errorf("dead letters %+v", dls)
	}
	f.wantEmpty()
}
