package serve

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/source"
)

// toyKind is a kind of source that only this test adds to sourceKinds:
// this type and one line in the table are all a kind takes.
type toyKind struct {
	commonFlags
	URL string
}

func newToyKind() sourceKind { return &toyKind{} }

func (*toyKind) name() string  { return "toy" }
func (*toyKind) title() string { return "Toy" }

func (k *toyKind) register(fs *flag.FlagSet) {
	fs.StringVar(&k.URL, "toy-url", "", "toy broker URL (turns the toy source on)")
	k.commonFlags.register(fs, "toy", "id", "message id of a toy message: id", "inbox scope of the toy messages")
}

func (k *toyKind) required() []setting { return []setting{{"toy-url", k.URL}} }

func (k *toyKind) validate(_ time.Duration, def server.Retention) error {
	return k.commonFlags.validate("toy", []string{"id"}, def)
}

func (k *toyKind) build(se sourceEnv) (server.Source, func(), error) {
	proc, err := se.processor("toy", k.Scope, processorSettings{})
	if err != nil {
		return server.Source{}, nil, err
	}
	return server.Source{Name: "toy", Scope: k.Scope, Source: toySource{proc}, Retention: k.retention}, func() {}, nil
}

// toySource runs until stopped.
type toySource struct{ source.Processor }

func (toySource) Run(ctx context.Context) error { <-ctx.Done(); return nil }

// TestAddingAKindIsOneLine: a kind added to the table alone gets its
// flags and help group, its config file list, its place in serve's
// messages, and its sources (of the flags and of the list) in the
// server. Not parallel: it changes sourceKinds while it runs.
func TestAddingAKindIsOneLine(t *testing.T) {
	saved := sourceKinds
	sourceKinds = append(slices.Clip(saved), newToyKind)
	t.Cleanup(func() { sourceKinds = saved })
	var help strings.Builder
	env := &clikit.Env{Stdout: &help, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	clikit.Execute(context.Background(), env, "txinbox serve", &Command{}, []string{"-h"})
	for _, want := range []string{"\nToy source:\n  --toy-key string", "--toy-retention duration", "--toy-url string",
		"kafka:, amqp:, sqs:, nats:, toy: lists of named sources"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("serve -h lacks %q:\n%s", want, help.String())
		}
	}
	if words := strings.Join(strings.Fields(help.String()), " "); !strings.Contains(words, "SQS, NATS JetStream and Toy consumers") {
		t.Errorf("serve -h does not name the toy consumers:\n%s", help.String())
	}
	if s := (&Command{}).Info().Summary; !strings.Contains(s, "(AS4, Kafka, RabbitMQ, SQS, NATS JetStream, Toy)") {
		t.Errorf("summary %q does not name the toy source", s)
	}
	db := filepath.Join(t.TempDir(), "toy.db")
	if _, err := parseServeFlags(env, []string{"--db", db}); err == nil || !strings.Contains(err.Error(), "--nats-url or --toy-url (or") {
		t.Errorf("no source: %v, want the toy kind named", err)
	}
	conf := filepath.Join(t.TempDir(), "toy.yaml")
	if err := os.WriteFile(conf, []byte("toy:\n  - {name: other, url: toy://b, retention: 9d}\n  - {name: bare}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parseServeFlags(env, []string{"--db", db, "--config", conf}); err == nil || !strings.Contains(err.Error(), `line 3: toy source "bare": give its url`) {
		t.Errorf("a listed toy source without its url: %v", err)
	}
	if err := os.WriteFile(conf, []byte("toy:\n  - {name: other, url: toy://b, retention: 9d}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := toySources(t, env, "--db", db, "--config", conf, "--toy-url", "toy://a", "--http-listen", ""); got != "toy/toy/30d other/other/9d" {
		t.Errorf("sources %s, want toy/toy/30d other/other/9d", got)
	}
}

// toySources builds serve's server of args and lists its sources as
// name/scope/retention.
func toySources(t *testing.T, env *clikit.Env, args ...string) string {
	t.Helper()
	o, err := parseServeFlags(env, args)
	if err != nil {
		t.Fatal(err)
	}
	return sourceRetentions(sqliteServer(t, env, &o).Config())
}
