package cli

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// flagSet is the flags of one command: a flag.FlagSet whose flags help
// shows in groups by topic, some marked required, each one also read from
// the environment (envName). Commands define their flags on it with the
// flag package's functions or this package's (intFlag, durationFlag, ...).
type flagSet struct {
	*flag.FlagSet
	groups   []*flagGroup
	required []string
	// local are the flags no TXINBOX_* variable sets (noEnv).
	local map[string]bool
}

// flagGroup is one topic of a command's help: its flags, by name.
type flagGroup struct {
	title string
	names []string
}

func newFlagSet(name string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors and help are printed by run and help
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs}
}

// group shows under title, in help, every flag that define adds. Calling it
// again with the same title adds to that group.
func (fs *flagSet) group(title string, define func()) {
	before := fs.names()
	define()
	g := fs.groupNamed(title)
	fs.VisitAll(func(f *flag.Flag) {
		if !slices.Contains(before, f.Name) {
			g.names = append(g.names, f.Name)
		}
	})
}

// groupPrefix moves into the group title the flags, not in a group yet,
// whose names start with one of prefixes: a way to sort the flags of code
// that defines them on a plain *flag.FlagSet.
func (fs *flagSet) groupPrefix(title string, prefixes ...string) {
	grouped := fs.grouped()
	g := fs.groupNamed(title)
	fs.VisitAll(func(f *flag.Flag) {
		if grouped[f.Name] {
			return
		}
		for _, p := range prefixes {
			if strings.HasPrefix(f.Name, p) {
				g.names = append(g.names, f.Name)
				return
			}
		}
	})
}

func (fs *flagSet) groupNamed(title string) *flagGroup {
	for _, g := range fs.groups {
		if g.title == title {
			return g
		}
	}
	g := &flagGroup{title: title}
	fs.groups = append(fs.groups, g)
	return g
}

// grouped reports which flags are in a group.
func (fs *flagSet) grouped() map[string]bool {
	in := map[string]bool{}
	for _, g := range fs.groups {
		for _, n := range g.names {
			in[n] = true
		}
	}
	return in
}

func (fs *flagSet) names() []string {
	var out []string
	fs.VisitAll(func(f *flag.Flag) { out = append(out, f.Name) })
	return out
}

// require marks flags that must be given, on the command line or in the
// environment; help says so.
func (fs *flagSet) require(names ...string) {
	fs.required = append(fs.required, names...)
}

// envName is the environment variable of a flag: --foo-bar is
// TXINBOX_FOO_BAR.
func envName(flagName string) string {
	return "TXINBOX_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parse parses args, with flags before, between and after the positional
// arguments ("--" ends the flags), then sets each flag the command line
// left unset from its environment variable, if that is not empty (the
// command line wins). It returns the positional arguments.
func (fs *flagSet) parse(args []string, getenv func(string) string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if fs.endedFlags(args[:len(args)-len(rest)]) {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	if err := fs.fromEnv(getenv); err != nil {
		return nil, err
	}
	return pos, nil
}

// missing names the first required flag that is still empty; "" if none.
func (fs *flagSet) missing() string {
	for _, name := range fs.required {
		if fs.Lookup(name).Value.String() == "" {
			return fmt.Sprintf("--%s is required (or set %s)", name, envName(name))
		}
	}
	return ""
}

// endedFlags reports whether the flags parsed from consumed ended with
// "--" in a flag's place (rather than as a flag's value).
func (fs *flagSet) endedFlags(consumed []string) bool {
	for i := 0; i < len(consumed); i++ {
		a := consumed[i]
		if a == "--" {
			return true
		}
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
				i++ // its value
			}
		}
	}
	return false
}

// noEnv exempts flags from the TXINBOX_* variables: a command line value
// only (the demo's broker flags, whose variables name serve's production
// brokers).
func (fs *flagSet) noEnv(names ...string) {
	if fs.local == nil {
		fs.local = map[string]bool{}
	}
	for _, n := range names {
		fs.local[n] = true
	}
}

// fromEnv sets the flags not set yet from their environment variables.
func (fs *flagSet) fromEnv(getenv func(string) string) error {
	if getenv == nil {
		return nil
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		v := getenv(envName(f.Name))
		if set[f.Name] || fs.local[f.Name] || v == "" || err != nil {
			return
		}
		if serr := fs.Set(f.Name, v); serr != nil {
			err = fmt.Errorf("environment %s: invalid value %q: %v", envName(f.Name), v, serr)
		}
	})
	return err
}

var badValue = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for flag -([^:]+): (.*)$`)

// flagError rewrites the flag package's parse errors in the words of the
// help: --name, and the value's own message when it names the flag. (An
// unknown flag keeps the flag package's words.)
func flagError(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return "--" + strings.TrimLeft(name, "-") + " needs a value"
	}
	if m := badValue.FindStringSubmatch(msg); m != nil {
		if strings.HasPrefix(m[3], "--"+m[2]) {
			return m[3]
		}
		return fmt.Sprintf("--%s: invalid value %q: %s", m[2], m[1], m[3])
	}
	return msg
}
