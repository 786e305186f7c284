package demo

import (
	"context"
	"flag"
	"fmt"
	"net/url"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/source/amqp"
	"github.com/txinbox/txinbox/store"
)

// The RabbitMQ demo: a real broker (TXINBOX_AMQP_URL, or
// amqp://guest:guest@127.0.0.1:5672/ as .ci/start-rabbitmq starts it); the
// parent declares a quorum queue for the run, publishes the plan with the
// event id as message_id (the source's default key), runs the consumer
// children and deletes the queue at the end.

// defaultAMQPURL is the broker of the RabbitMQ demo when neither
// --amqp-url nor TXINBOX_AMQP_URL names one.
const defaultAMQPURL = "amqp://guest:guest@127.0.0.1:5672/"

func runDemoRabbitMQ(ctx context.Context, env *clikit.Env, o Options) (*demoSummary, error) {
	return runQueueDemo(ctx, env, o, func(ctx context.Context, run string) (queueBroker, error) {
		return startAMQPDemo(ctx, run, o.amqpURL)
	})
}

// amqpDemo is a connection to the broker and the run's queue.
type amqpDemo struct {
	url   string
	conn  *amqp091.Connection
	ch    *amqp091.Channel
	queue string
}

func startAMQPDemo(_ context.Context, run, amqpURL string) (queueBroker, error) {
	b := &amqpDemo{url: amqpURL, queue: "invoices-" + run}
	var err error
	if b.conn, err = amqp091.Dial(b.url); err != nil {
		return nil, fmt.Errorf("connecting to RabbitMQ at %s (set --amqp-url or TXINBOX_AMQP_URL, or run .ci/start-rabbitmq): %w", redactAMQP(b.url), err)
	}
	if b.ch, err = b.conn.Channel(); err == nil {
		_, err = b.ch.QueueDeclare(b.queue, true, false, false, false, amqp091.Table{"x-queue-type": "quorum"})
	}
	if err == nil {
		err = b.ch.Confirm(false)
	}
	if err != nil {
		b.conn.Close()
		return nil, fmt.Errorf("declaring queue %s: %w", b.queue, err)
	}
	return b, nil
}

func redactAMQP(u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return "(an unparsable URL)"
	}
	return pu.Redacted()
}

func (b *amqpDemo) where() string { return "RabbitMQ at " + redactAMQP(b.url) + ", quorum queue" }

func (b *amqpDemo) close() {
	b.ch.QueueDelete(b.queue, false, false, false) //nolint:errcheck // best effort
	b.conn.Close()
}

func (b *amqpDemo) publish(ctx context.Context, ids, payloads []string, stream []int) error {
	confs := make([]*amqp091.DeferredConfirmation, 0, len(stream))
	for i, m := range stream {
		conf, err := b.ch.PublishWithDeferredConfirmWithContext(ctx, "", b.queue, true, false, amqp091.Publishing{
			MessageId: ids[m], ContentType: "application/json", DeliveryMode: amqp091.Persistent,
			Headers: amqp091.Table{"publish-seq": int64(i)}, Body: []byte(payloads[m])})
		if err != nil {
			return err
		}
		confs = append(confs, conf)
	}
	for _, c := range confs {
		if ok, err := c.WaitContext(ctx); err != nil || !ok {
			return fmt.Errorf("the broker did not confirm a publish: %v", err)
		}
	}
	return nil
}

// pending counts the ready messages, which is exact only when no consumer
// holds any unacked (AMQP does not report the unacked count).
func (b *amqpDemo) pending(context.Context) (int, bool, error) {
	q, err := b.ch.QueueDeclarePassive(b.queue, true, false, false, false, amqp091.Table{"x-queue-type": "quorum"})
	return q.Messages, q.Consumers == 0, err
}

func (b *amqpDemo) childArgs() []string {
	return []string{"demo-consumer-amqp", "--url", b.url, "--queue", b.queue}
}

// RunConsumerAMQP is the hidden child command: one consumer of the
// demo's queue, until its stdin closes or it is killed.
func RunConsumerAMQP(ctx context.Context, env *clikit.Env, args []string) int {
	fs := flag.NewFlagSet("demo-consumer-amqp", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var f queueChildFlags
	f.register(fs, env)
	u := fs.String("url", "", "the AMQP URL")
	queue := fs.String("queue", "", "the queue to consume")
	if err := fs.Parse(args); err != nil {
		return clikit.ExitUsage
	}
	return runQueueChild(ctx, env, &f, "demo-consumer-amqp", func(ctx context.Context, c *demoConsumer, db *clikit.InboxDB) error {
		if db.PG != nil {
			return consumeAMQP(ctx, c, db.PG, clikit.PGTxExec, *u, *queue)
		}
		return consumeAMQP(ctx, c, db.SQL, db.SQLExec(), *u, *queue)
	})
}

func consumeAMQP[TTx any](ctx context.Context, c *demoConsumer, d store.Driver[TTx], exec clikit.TxExecFunc[TTx], u, queue string) error {
	key := amqp.MessageIDKey
	if c.sabotage == SabotageDeliveryKey {
		key = amqp.HeaderKey("publish-seq") // a re-send is a new publish: its effect runs again
	}
	proc, err := txinbox.NewProcessor(d, queueInboxConfig(c, exec))
	if err != nil {
		return err
	}
	consumer, err := amqp.New(proc, amqp.Config{URL: u, Queue: queue, Key: key, Logger: c.log})
	if err != nil {
		return err
	}
	return consumer.Run(ctx)
}
