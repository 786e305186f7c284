package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/brokers"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/source/jetstream"
	"github.com/txinbox/txinbox/store"
)

// The NATS JetStream demo: the parent starts nats-server with JetStream in
// a txinbox-brokers child process (or uses --nats-url) and publishes the plan to a stream of the run.
// The event id travels in the header "message-id" rather than Nats-Msg-Id:
// JetStream would drop a re-send within its two-minute deduplication
// window, and the demo shows the inbox catching re-sends at any distance.

const (
	demoIDHeader = "message-id"
	// demoAckWait is the children's AckWait (and SQS visibility
	// timeout): a SIGKILLed child's messages come back this long after
	// its death.
	demoAckWait = 2 * time.Second
)

func runDemoNATS(ctx context.Context, env *clikit.Env, o Options) (*demoSummary, error) {
	return runQueueDemo(ctx, env, o, func(ctx context.Context, run string) (queueBroker, error) {
		return startNATSDemo(ctx, env, o.External.nats, run)
	})
}

// natsDemo is the server and the run's stream.
type natsDemo struct {
	brokers *brokers.Running // nil with --nats-url
	url     string
	nc      *nats.Conn
	js      natsjs.JetStream
	stream  string
}

func startNATSDemo(ctx context.Context, env *clikit.Env, url, run string) (queueBroker, error) {
	b := &natsDemo{url: url, stream: "INVOICES_" + run}
	if url == "" {
		r, err := StartBrokers(ctx, env, brokers.Options{NATS: true})
		if err != nil {
			return nil, err
		}
		b.brokers, b.url = r, r.NATSURL
	}
	var err error
	if b.nc, err = nats.Connect(b.url); err == nil {
		b.js, err = natsjs.New(b.nc)
	}
	if err == nil {
		_, err = b.js.CreateStream(ctx, natsjs.StreamConfig{Name: b.stream, Subjects: []string{b.subject()}})
	}
	if err != nil {
		b.close()
		return nil, fmt.Errorf("creating stream %s on %s: %w", b.stream, b.url, err)
	}
	return b, nil
}

func (b *natsDemo) subject() string { return "invoices." + b.stream }

func (b *natsDemo) where() string {
	if b.brokers != nil {
		return "nats-server " + b.brokers.NATSVersion + " (JetStream)"
	}
	return "NATS JetStream at " + b.url
}

func (b *natsDemo) close() {
	if b.nc != nil {
		b.nc.Close()
	}
	if b.brokers != nil {
		b.brokers.Stop() //nolint:errcheck // best effort at the end
	}
}

func (b *natsDemo) publish(ctx context.Context, ids, payloads []string, stream []int) error {
	for i, m := range stream {
		msg := nats.NewMsg(b.subject())
		msg.Data = []byte(payloads[m])
		msg.Header.Set(demoIDHeader, ids[m])
		msg.Header.Set("publish-seq", strconv.Itoa(i))
		if _, err := b.js.PublishMsgAsync(msg); err != nil {
			return err
		}
	}
	select {
	case <-b.js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pending counts the messages the demo's durable consumer has not acked;
// before the first child created it, the whole stream.
func (b *natsDemo) pending(ctx context.Context) (int, bool, error) {
	cons, err := b.js.Consumer(ctx, b.stream, demoScope)
	if errors.Is(err, natsjs.ErrConsumerNotFound) {
		st, err := b.js.Stream(ctx, b.stream)
		if err != nil {
			return 0, false, err
		}
		return int(st.CachedInfo().State.Msgs), true, nil
	}
	if err != nil {
		return 0, false, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, false, err
	}
	return int(info.NumPending) + info.NumAckPending, true, nil
}

func (b *natsDemo) childArgs() []string {
	return []string{"demo-consumer-nats", "--url", b.url, "--stream", b.stream}
}

// RunConsumerNATS is the hidden child command: one consumer of the
// demo's durable consumer, until its stdin closes or it is killed.
func RunConsumerNATS(ctx context.Context, env *clikit.Env, args []string) int {
	fs := flag.NewFlagSet("demo-consumer-nats", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var f queueChildFlags
	f.register(fs, env)
	url := fs.String("url", "", "the NATS server")
	stream := fs.String("stream", "", "the stream to consume")
	if err := fs.Parse(args); err != nil {
		return clikit.ExitUsage
	}
	return runQueueChild(ctx, env, &f, "demo-consumer-nats", func(ctx context.Context, c *demoConsumer, db *clikit.InboxDB) error {
		if db.PG != nil {
			return consumeNATS(ctx, c, db.PG, clikit.PGTxExec, *url, *stream)
		}
		return consumeNATS(ctx, c, db.SQL, db.SQLExec(), *url, *stream)
	})
}

func consumeNATS[TTx any](ctx context.Context, c *demoConsumer, d store.Driver[TTx], exec clikit.TxExecFunc[TTx], url, stream string) error {
	key := jetstream.HeaderKey(demoIDHeader)
	if c.sabotage == SabotageDeliveryKey {
		key = jetstream.SequenceKey // a re-send is a new stream sequence: its effect runs again
	}
	proc, err := txinbox.NewProcessor(d, queueInboxConfig(c, exec))
	if err != nil {
		return err
	}
	consumer, err := jetstream.New(proc, jetstream.Config{
		URL: url, Stream: stream, Consumer: demoScope, Key: key, AckWait: demoAckWait, Logger: c.log,
	})
	if err != nil {
		return err
	}
	return consumer.Run(ctx)
}
