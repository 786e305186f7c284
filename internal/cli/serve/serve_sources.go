package serve

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/effect"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/store"
)

// sourceKinds are serve's broker sources by kind, in the order help lists
// them. Serve's flags, the config file's lists, the checks and the
// building all go through this table: adding a kind is a file with its
// sourceKind and a line here.
var sourceKinds = []func() sourceKind{newKafkaKind, newAMQPKind, newSQSKind, newNATSKind}

// sourceKind is one kind of broker source of serve. A value holds the
// flags of one source of the kind: serve's own --KIND-* flags, or one
// item of a config file's KIND: list (the same flags without the KIND-
// prefix). Each source has its own processor (and scope) over the one
// inbox database.
type sourceKind interface {
	// name is the kind: the prefix of its flags (--kafka-brokers), the
	// name and scope of its source by default, and its config file list.
	name() string
	// title names the kind in help: "Kafka" (the group "Kafka source").
	title() string
	// register defines the kind's flags on fs, bound to the value.
	register(fs *flag.FlagSet)
	// required are the flags that turn the source on, with their values:
	// any of them set turns it on, and then every one is required. The
	// first is the one serve names when no source is given.
	required() []setting
	// validate checks and parses the flags; errors name the flag.
	// retryWindow and def are --retry-window and --retention.
	validate(retryWindow time.Duration, def server.Retention) error
	// build creates the source, named by the kind; none connects yet
	// (the SQS and Kafka clients connect lazily; NATS retries in the
	// background). close closes what it opened, once the server stopped.
	build(se sourceEnv) (src server.Source, close func(), err error)
}

// setting is a flag of a kind and its value.
type setting struct{ flag, value string }

// configured reports whether any of k's required flags is set.
func configured(k sourceKind) bool {
	for _, s := range k.required() {
		if s.value != "" {
			return true
		}
	}
	return false
}

// missing names the first required flag of k left empty while another
// turns the source on.
func missing(k sourceKind) error {
	if !configured(k) {
		return nil
	}
	for _, s := range k.required() {
		if s.value == "" {
			return fmt.Errorf("--%s is required with the %s source", s.flag, k.name())
		}
	}
	return nil
}

// newSourceKinds returns a value of every kind, for serve's own flags.
func newSourceKinds() []sourceKind {
	out := make([]sourceKind, len(sourceKinds))
	for i, newKind := range sourceKinds {
		out[i] = newKind()
	}
	return out
}

// validateKinds checks the flags of each kind: first that the required
// flags of every source turned on are set, then each kind's own.
func validateKinds(kinds []sourceKind, retryWindow time.Duration, def server.Retention) error {
	var errs []error
	for _, k := range kinds {
		errs = append(errs, missing(k))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, k := range kinds {
		if err := k.validate(retryWindow, def); err != nil {
			return err
		}
	}
	return nil
}

// anyConfigured reports whether a source of kinds is turned on.
func anyConfigured(kinds []sourceKind) bool {
	for _, k := range kinds {
		if configured(k) {
			return true
		}
	}
	return false
}

// onFlags names the flag that turns each kind on, for serve's "no source"
// error: "--kafka-brokers, --amqp-url, --sqs-queue-url or --nats-url".
func onFlags() string {
	var names []string
	for _, newKind := range sourceKinds {
		names = append(names, "--"+newKind().required()[0].flag)
	}
	return joinList(names, "or")
}

// sourceTitles are the kinds' titles, for serve's help.
func sourceTitles() []string {
	var titles []string
	for _, newKind := range sourceKinds {
		titles = append(titles, newKind().title())
	}
	return titles
}

// joinList writes "a, b and c" (conj "and") or "a, b or c".
func joinList(items []string, conj string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " " + conj + " " + items[len(items)-1]
}

// wrapText breaks text into lines of at most width characters, between
// words.
func wrapText(text string, width int) string {
	var b strings.Builder
	line := 0
	for i, w := range strings.Fields(text) {
		switch {
		case i == 0:
		case line+1+len(w) > width:
			b.WriteByte('\n')
			line = 0
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	return b.String()
}

// commonFlags are the flags of every kind: --KIND-key, --KIND-scope and
// --KIND-retention.
type commonFlags struct {
	Key, Scope, Retention string
	retention             server.Retention // parsed by validate
}

// register defines the common flags of kind: keyDef and keyUsage are
// --KIND-key's, scopeUsage --KIND-scope's.
func (c *commonFlags) register(fs *flag.FlagSet, kind, keyDef, keyUsage, scopeUsage string) {
	fs.StringVar(&c.Key, kind+"-key", keyDef, keyUsage)
	fs.StringVar(&c.Scope, kind+"-scope", kind, scopeUsage)
	clikit.DurationTextFlag(fs, &c.Retention, kind+"-retention", "", "keep the "+kind+" scope's inbox rows this long (default: --retention)")
}

// validate checks --KIND-key (one of the fixed names, or a prefixed
// name) and parses --KIND-retention (def when empty).
func (c *commonFlags) validate(kind string, fixedKeys []string, def server.Retention) error {
	if err := checkKeyFlag(kind+"-key", c.Key, fixedKeys); err != nil {
		return err
	}
	var err error
	c.retention, err = retentionOr(kind+"-retention", c.Retention, def)
	return err
}

// checkKeyFlag accepts one of the fixed names, or header:NAME (attribute:
// for SQS) with a name.
func checkKeyFlag(flagName, v string, fixed []string) error {
	for _, f := range fixed {
		if v == f {
			return nil
		}
	}
	prefix := "header:"
	if flagName == "sqs-key" {
		prefix = "attribute:"
	}
	if name, ok := strings.CutPrefix(v, prefix); ok && name != "" {
		return nil
	}
	return fmt.Errorf("--%s %q: use %s or %sNAME", flagName, v, strings.Join(fixed, ", "), prefix)
}

// retryWindowFlags is the --KIND-retry-window of a kind whose producers
// may resend a message: the source's server.Source.RetryWindow.
type retryWindowFlags struct {
	RetryWindow string
	window      time.Duration // parsed by validate
}

func (w *retryWindowFlags) register(fs *flag.FlagSet, kind, producers string) {
	clikit.DurationTextFlag(fs, &w.RetryWindow, kind+"-retry-window", "", "how long "+producers+" may resend a message (default: --retry-window)")
}

func (w *retryWindowFlags) validate(kind string, def time.Duration) error {
	var err error
	w.window, err = windowOr(kind+"-retry-window", w.RetryWindow, def)
	return err
}

// horizon is the retry window of what, with the flag that set it.
func (w *retryWindowFlags) horizon(kind, what string) source.Horizon {
	return source.Horizon{What: what, Within: w.window, Figure: retryWindowFigure(kind+"-retry-window", w.RetryWindow, w.window)}
}

func windowOr(flagName, v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	d, err := clikit.ParseRetention(v)
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", flagName, err)
	}
	return d, nil
}

func retryWindowFigure(flagName, v string, d time.Duration) string {
	if v == "" {
		return "--retry-window " + duration.Format(d)
	}
	return "--" + flagName + " " + v
}

// retentionOr parses a source's --NAME retention, or returns def when empty.
func retentionOr(flagName, v string, def server.Retention) (server.Retention, error) {
	if v == "" {
		return def, nil
	}
	d, err := clikit.ParseRetention(v)
	if err != nil {
		return server.Retention{}, fmt.Errorf("--%s: %w", flagName, err)
	}
	return server.Retention{Keep: d, Setting: "--" + flagName + " " + v}, nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// sourceEnv is what building a source needs besides its flags.
type sourceEnv struct {
	// processor builds the processor of a source of kind over serve's
	// inbox and effect, with the kind's own settings.
	processor func(kind, scope string, own processorSettings) (source.Processor, error)
	logger    *slog.Logger
	getenv    func(string) string
}

// processorSettings are what a kind sets of its processor's
// txinbox.Config; zero values keep serve's.
type processorSettings struct {
	Ordered     bool
	MaxAttempts int
	Backoff     txinbox.BackoffFunc
}

// processorOf builds processors over driver, of the inbox configuration
// that inbox returns for a source, with a kind's own settings.
func processorOf[TTx any](driver store.Driver[TTx], inbox func(kind, scope string) txinbox.Config[TTx],
) func(kind, scope string, own processorSettings) (source.Processor, error) {
	return func(kind, scope string, own processorSettings) (source.Processor, error) {
		cfg := inbox(kind, scope)
		cfg.Ordered = cfg.Ordered || own.Ordered
		if own.MaxAttempts != 0 {
			cfg.MaxAttempts = own.MaxAttempts
		}
		if own.Backoff != nil {
			cfg.Backoff = own.Backoff
		}
		proc, err := txinbox.NewProcessor(driver, cfg)
		if err != nil {
			return nil, fmt.Errorf("%s source: %w", kind, err)
		}
		return proc, nil
	}
}

// sourceGroup is the sources of one set of flags: serve's own (a value of
// every kind, named by their kind) or a config file's list item (one
// kind, named).
type sourceGroup struct {
	name  string
	kinds []sourceKind
}

// sourceGroups are the flags' sources and each listed source's.
func (o *serveOptions) sourceGroups() []sourceGroup {
	out := []sourceGroup{{kinds: o.sources}}
	for _, ls := range o.listed {
		out = append(out, sourceGroup{name: ls.name, kinds: []sourceKind{ls.kind}})
	}
	return out
}

// addSources builds the broker sources of the flags and of the config
// file's lists, their processors with the server's hooks and the
// configured effect, and adds them to srv; the returned function closes
// them once the server stopped.
func addSources[TTx any](srv *server.Server, o *serveOptions, driver store.Driver[TTx],
	eff *effect.Effect[TTx], env *clikit.Env, logger *slog.Logger) (func(), error) {
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	for _, g := range o.sourceGroups() {
		lg := logger
		if g.name != "" {
			lg = logger.With("source", g.name)
		}
		se := sourceEnv{logger: lg, getenv: env.Getenv, processor: processorOf(driver,
			func(kind, scope string) txinbox.Config[TTx] {
				return eff.Apply(txinbox.Config[TTx]{Scope: scope, Logger: lg, Hooks: srv.Hooks()}, kind)
			})}
		for _, k := range g.kinds {
			if !configured(k) {
				continue
			}
			src, closeSrc, err := k.build(se)
			if err == nil {
				closers = append(closers, closeSrc)
				if g.name != "" {
					src.Name = g.name
				}
				err = srv.Add(src)
			}
			if err != nil {
				closeAll()
				return nil, err
			}
		}
	}
	return closeAll, nil
}
