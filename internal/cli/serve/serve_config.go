package serve

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/server"
	"go.yaml.in/yaml/v3"
)

// sourceKinds are the broker sources that a config file may list, each
// item a source of its own: `kafka: [{name: orders, brokers: ..., topics:
// ...}, {name: billing, ...}]`.
var sourceKinds = []string{"kafka", "amqp", "sqs", "nats"}

// listedSource is one item of a config file's source list: the flags of
// one source of its kind, named.
type listedSource struct {
	kind  string
	flags sourceFlags
	at    string // "config FILE line N", for errors
}

// sourceSections reads the config file's kafka:, amqp:, sqs: and nats:
// lists into o.listed.
func (o *serveOptions) sourceSections() map[string]clikit.Section {
	out := map[string]clikit.Section{}
	for _, kind := range sourceKinds {
		out[kind] = func(item *yaml.Node, path string) error {
			ls, err := readListedSource(kind, item, path)
			if err == nil {
				o.listed = append(o.listed, ls)
			}
			return err
		}
	}
	return out
}

// readListedSource reads one item: name, and the kind's flags without the
// kind's prefix (brokers for --kafka-brokers). Its scope defaults to its
// name.
func readListedSource(kind string, item *yaml.Node, path string) (listedSource, error) {
	at := fmt.Sprintf("config %s line %d", path, item.Line)
	fs := flag.NewFlagSet(kind, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ls := listedSource{kind: kind, at: at}
	ls.flags.register(fs)
	scoped := false
	for i := 0; i+1 < len(item.Content); i += 2 {
		k, v := item.Content[i], item.Content[i+1]
		if k.Value == "name" && v.Kind == yaml.ScalarNode {
			ls.flags.name = v.Value
			continue
		}
		name := kind + "-" + k.Value
		if fs.Lookup(name) == nil {
			return ls, fmt.Errorf("%s: %s source: unknown setting %q (settings are name and the --%s-* flags without %q)",
				at, kind, k.Value, kind, kind+"-")
		}
		if err := clikit.SetFromYAML(fs, name, v, nil); err != nil {
			return ls, fmt.Errorf("config %s line %d: %s source: %s: %w", path, v.Line, kind, k.Value, err)
		}
		scoped = scoped || k.Value == "scope"
	}
	if ls.flags.name == "" {
		ls.flags.name = kind
	}
	if !scoped {
		fs.Set(kind+"-scope", ls.flags.name) //nolint:errcheck // a string flag
	}
	if !ls.flags.configured() {
		return ls, fmt.Errorf("%s: %s source %q: give its %s", at, kind, ls.flags.name, map[string]string{
			"kafka": "brokers, topics and group", "amqp": "url and queue", "sqs": "queue-url", "nats": "url, stream and consumer"}[kind])
	}
	return ls, nil
}

// validateListed checks each listed source like the flags of one, and
// that no two sources share a name.
func (o *serveOptions) validateListed(retryWindow time.Duration, def server.Retention) error {
	names := map[string]bool{}
	for _, kind := range sourceKinds {
		names[kind] = o.sources.has(kind)
	}
	for i := range o.listed {
		ls := &o.listed[i]
		if err := ls.flags.validate(retryWindow, def); err != nil {
			return fmt.Errorf("%s: %s source %q: %w", ls.at, ls.kind, ls.flags.name, err)
		}
		if names[ls.flags.name] {
			return fmt.Errorf("%s: two sources are named %q: give each a name of its own", ls.at, ls.flags.name)
		}
		names[ls.flags.name] = true
	}
	return nil
}

// has reports whether the flags turn the source of kind on.
func (f *sourceFlags) has(kind string) bool {
	switch kind {
	case "kafka":
		return f.KafkaBrokers != ""
	case "amqp":
		return f.AMQPURL != ""
	case "sqs":
		return f.SQSQueueURL != ""
	}
	return f.NATSURL != ""
}
