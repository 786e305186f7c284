package serve

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/source/jetstream"
)

// natsKind is the NATS JetStream source: --nats-*.
type natsKind struct {
	commonFlags
	retryWindowFlags
	URL, Stream, Consumer string
	AckWait               time.Duration
}

func newNATSKind() sourceKind { return &natsKind{} }

func (*natsKind) name() string  { return "nats" }
func (*natsKind) title() string { return "NATS JetStream" }

func (k *natsKind) register(fs *flag.FlagSet) {
	fs.StringVar(&k.URL, "nats-url", "", "NATS server URL(s), separated by commas (turns the NATS JetStream source on)")
	fs.StringVar(&k.Stream, "nats-stream", "", "JetStream stream consumed")
	fs.StringVar(&k.Consumer, "nats-consumer", "", "durable JetStream consumer (created or updated at start)")
	k.commonFlags.register(fs, "nats", "msg-id", "message id of a message: msg-id (Nats-Msg-Id, else stream/sequence), sequence or header:NAME",
		"inbox scope of the NATS messages")
	k.retryWindowFlags.register(fs, "nats", "NATS publishers")
	clikit.DurationFlag(fs, &k.AckWait, "nats-ack-wait", 30*time.Second, false, "JetStream AckWait: an unacked message comes back after it")
}

func (k *natsKind) required() []setting {
	return []setting{{"nats-url", k.URL}, {"nats-stream", k.Stream}, {"nats-consumer", k.Consumer}}
}

func (k *natsKind) validate(retryWindow time.Duration, def server.Retention) error {
	if err := k.commonFlags.validate("nats", []string{"msg-id", "sequence"}, def); err != nil {
		return err
	}
	if k.AckWait < time.Second {
		return fmt.Errorf("--nats-ack-wait %s: must be at least 1s", k.AckWait)
	}
	return k.retryWindowFlags.validate("nats", retryWindow)
}

func (k *natsKind) build(se sourceEnv) (server.Source, func(), error) {
	var key jetstream.KeyFunc
	switch {
	case k.Key == "sequence":
		key = jetstream.SequenceKey
	case strings.HasPrefix(k.Key, "header:"):
		key = jetstream.HeaderKey(strings.TrimPrefix(k.Key, "header:"))
	}
	proc, err := se.processor("nats", k.Scope, processorSettings{})
	if err != nil {
		return server.Source{}, nil, err
	}
	// The connection is serve's, so that /readyz sees it before the
	// consumer runs; it retries in the background while the server is
	// down.
	nc, err := nats.Connect(k.URL, nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true),
		nats.Name("txinbox serve "+k.Consumer))
	if err != nil {
		return server.Source{}, nil, fmt.Errorf("--nats-url: %w", err)
	}
	c, err := jetstream.New(proc, jetstream.Config{Conn: nc, Stream: k.Stream, Consumer: k.Consumer, Key: key,
		AckWait: k.AckWait, Logger: se.logger})
	if err != nil {
		nc.Close()
		return server.Source{}, nil, fmt.Errorf("nats source: %w", err)
	}
	closeConn := func() {
		if nc.IsConnected() {
			nc.FlushTimeout(2 * time.Second) //nolint:errcheck // best effort: unsent acks become redeliveries
		}
		nc.Close()
	}
	return server.Source{Name: "nats", Scope: k.Scope, Source: c, Retention: k.retention,
		RetryWindow: k.horizon("nats", fmt.Sprintf("NATS stream %q", k.Stream))}, closeConn, nil
}
