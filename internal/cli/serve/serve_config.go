package serve

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/server"
	"go.yaml.in/yaml/v3"
)

// listedSource is one item of a config file's source list (`kafka:
// [{name: orders, brokers: ..., topics: ...}, {name: billing, ...}]`):
// the flags of one source of its kind, named.
type listedSource struct {
	kind sourceKind
	name string
	at   string // "config FILE line N", for errors
}

// sourceSections reads the config file's list of each kind (kafka:,
// amqp:, sqs:, nats:) into o.listed.
func (o *serveOptions) sourceSections() map[string]clikit.Section {
	out := map[string]clikit.Section{}
	for _, newKind := range sourceKinds {
		out[newKind().name()] = func(item *yaml.Node, path string) error {
			ls, err := readListedSource(newKind(), item, path)
			if err == nil {
				o.listed = append(o.listed, ls)
			}
			return err
		}
	}
	return out
}

// listKeys names the config file's lists: "kafka:, amqp:, sqs:, nats:".
func listKeys() string {
	var keys []string
	for _, newKind := range sourceKinds {
		keys = append(keys, newKind().name()+":")
	}
	return strings.Join(keys, ", ")
}

// readListedSource reads one item of k's list: name, and the kind's flags
// without the kind's prefix (brokers for --kafka-brokers). Its scope
// defaults to its name.
func readListedSource(k sourceKind, item *yaml.Node, path string) (listedSource, error) {
	kind := k.name()
	at := fmt.Sprintf("config %s line %d", path, item.Line)
	fs := flag.NewFlagSet(kind, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ls := listedSource{kind: k, at: at}
	k.register(fs)
	scoped := false
	for i := 0; i+1 < len(item.Content); i += 2 {
		key, v := item.Content[i], item.Content[i+1]
		if key.Value == "name" && v.Kind == yaml.ScalarNode {
			ls.name = v.Value
			continue
		}
		name := kind + "-" + key.Value
		if fs.Lookup(name) == nil {
			return ls, fmt.Errorf("%s: %s source: unknown setting %q (settings are name and the --%s-* flags without %q)",
				at, kind, key.Value, kind, kind+"-")
		}
		if err := clikit.SetFromYAML(fs, name, v, nil); err != nil {
			return ls, fmt.Errorf("config %s line %d: %s source: %s: %w", path, v.Line, kind, key.Value, err)
		}
		scoped = scoped || key.Value == "scope"
	}
	if ls.name == "" {
		ls.name = kind
	}
	if !scoped {
		fs.Set(kind+"-scope", ls.name) //nolint:errcheck // a string flag
	}
	if !configured(k) {
		return ls, fmt.Errorf("%s: %s source %q: give its %s", at, kind, ls.name, listNeeds(k))
	}
	return ls, nil
}

// listNeeds names k's required settings as a list item has them:
// "brokers, topics and group".
func listNeeds(k sourceKind) string {
	var names []string
	for _, s := range k.required() {
		names = append(names, strings.TrimPrefix(s.flag, k.name()+"-"))
	}
	return joinList(names, "and")
}

// validateListed checks each listed source like the flags of one, and
// that no two sources share a name.
func (o *serveOptions) validateListed(retryWindow time.Duration, def server.Retention) error {
	names := map[string]bool{}
	for _, k := range o.sources {
		names[k.name()] = configured(k)
	}
	for _, ls := range o.listed {
		if err := validateKinds([]sourceKind{ls.kind}, retryWindow, def); err != nil {
			return fmt.Errorf("%s: %s source %q: %w", ls.at, ls.kind.name(), ls.name, err)
		}
		if names[ls.name] {
			return fmt.Errorf("%s: two sources are named %q: give each a name of its own", ls.at, ls.name)
		}
		names[ls.name] = true
	}
	return nil
}
