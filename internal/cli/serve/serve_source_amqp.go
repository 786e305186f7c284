package serve

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/source/amqp"
)

// amqpKind is the RabbitMQ source: --amqp-*.
type amqpKind struct {
	commonFlags
	retryWindowFlags
	URL, Queue string
}

func newAMQPKind() sourceKind { return &amqpKind{} }

func (*amqpKind) name() string  { return "amqp" }
func (*amqpKind) title() string { return "RabbitMQ" }

func (k *amqpKind) register(fs *flag.FlagSet) {
	fs.StringVar(&k.URL, "amqp-url", "", "RabbitMQ URL, amqp://user:pass@host:5672/vhost (turns the RabbitMQ source on)")
	fs.StringVar(&k.Queue, "amqp-queue", "", "RabbitMQ queue consumed (it must exist)")
	k.commonFlags.register(fs, "amqp", "message-id", "message id of a delivery: message-id (the property) or header:NAME",
		"inbox scope of the RabbitMQ deliveries")
	k.retryWindowFlags.register(fs, "amqp", "RabbitMQ producers")
}

func (k *amqpKind) required() []setting {
	return []setting{{"amqp-url", k.URL}, {"amqp-queue", k.Queue}}
}

func (k *amqpKind) validate(retryWindow time.Duration, def server.Retention) error {
	if err := k.commonFlags.validate("amqp", []string{"message-id"}, def); err != nil {
		return err
	}
	return k.retryWindowFlags.validate("amqp", retryWindow)
}

func (k *amqpKind) build(se sourceEnv) (server.Source, func(), error) {
	key := amqp.MessageIDKey
	if name, ok := strings.CutPrefix(k.Key, "header:"); ok {
		key = amqp.HeaderKey(name)
	}
	proc, err := se.processor("amqp", k.Scope, processorSettings{})
	if err != nil {
		return server.Source{}, nil, err
	}
	c, err := amqp.New(proc, amqp.Config{URL: k.URL, Queue: k.Queue, Key: key, Logger: se.logger})
	if err != nil {
		return server.Source{}, nil, fmt.Errorf("amqp source: %w", err)
	}
	return server.Source{Name: "amqp", Scope: k.Scope, Source: c, Retention: k.retention,
		RetryWindow: k.horizon("amqp", fmt.Sprintf("RabbitMQ queue %q", k.Queue))}, func() {}, nil
}
