package clikit

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// FlagSet is the flags of one command: a flag.FlagSet whose flags help
// shows in groups by topic, some marked required, each one also read from
// the environment (EnvName). Commands define their flags on it with the
// flag package's functions or this package's (IntFlag, DurationFlag, ...).
type FlagSet struct {
	*flag.FlagSet
	// Groups are the topics of help, in the order made (Group).
	Groups   []*FlagGroup
	required []string
	// local are the flags no TXINBOX_* variable sets (noEnv).
	local map[string]bool
	// envSet are the flags that fromEnv set, each with its variable.
	envSet map[string]string
}

// FlagGroup is one topic of a command's help: its flags, by name.
type FlagGroup struct {
	// Title heads the group in help.
	Title string
	// Names are the group's flags, in the order shown.
	Names []string
}

// NewFlagSet is an empty FlagSet for the command path name.
func NewFlagSet(name string) *FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors and help are printed by run and help
	fs.Usage = func() {}
	return &FlagSet{FlagSet: fs}
}

// Group shows under title, in help, every flag that define adds. Calling it
// again with the same title adds to that group.
func (fs *FlagSet) Group(title string, define func()) {
	before := fs.Names()
	define()
	g := fs.groupNamed(title)
	fs.VisitAll(func(f *flag.Flag) {
		if !slices.Contains(before, f.Name) {
			g.Names = append(g.Names, f.Name)
		}
	})
}

// GroupPrefix moves into the group title the flags, not in a group yet,
// whose names start with one of prefixes: a way to sort the flags of code
// that defines them on a plain *flag.FlagSet.
func (fs *FlagSet) GroupPrefix(title string, prefixes ...string) {
	grouped := fs.grouped()
	g := fs.groupNamed(title)
	fs.VisitAll(func(f *flag.Flag) {
		if grouped[f.Name] {
			return
		}
		for _, p := range prefixes {
			if strings.HasPrefix(f.Name, p) {
				g.Names = append(g.Names, f.Name)
				return
			}
		}
	})
}

func (fs *FlagSet) groupNamed(title string) *FlagGroup {
	for _, g := range fs.Groups {
		if g.Title == title {
			return g
		}
	}
	g := &FlagGroup{Title: title}
	fs.Groups = append(fs.Groups, g)
	return g
}

// grouped reports which flags are in a group.
func (fs *FlagSet) grouped() map[string]bool {
	in := map[string]bool{}
	for _, g := range fs.Groups {
		for _, n := range g.Names {
			in[n] = true
		}
	}
	return in
}

// Names are the names of the flags, in the order flag.FlagSet.VisitAll
// visits them (sorted).
func (fs *FlagSet) Names() []string {
	var out []string
	fs.VisitAll(func(f *flag.Flag) { out = append(out, f.Name) })
	return out
}

// Require marks flags that must be given, on the command line or in the
// environment; help says so.
func (fs *FlagSet) Require(names ...string) {
	fs.required = append(fs.required, names...)
}

// EnvName is the environment variable of a flag: --foo-bar is
// TXINBOX_FOO_BAR.
func EnvName(flagName string) string {
	return "TXINBOX_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// ParseAll parses args, with flags before, between and after the positional
// arguments ("--" ends the flags), then sets each flag the command line
// left unset from its environment variable, if that is not empty (the
// command line wins). It returns the positional arguments.
func (fs *FlagSet) ParseAll(args []string, getenv func(string) string) ([]string, error) {
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

// Missing names the first required flag that is still empty; "" if none.
func (fs *FlagSet) Missing() string {
	for _, name := range fs.required {
		if strings.TrimSpace(fs.Lookup(name).Value.String()) == "" { // blanks are no value either
			return fmt.Sprintf("--%s is required (or set %s)", name, EnvName(name))
		}
	}
	return ""
}

// endedFlags reports whether the flags parsed from consumed ended with
// "--" in a flag's place (rather than as a flag's value).
func (fs *FlagSet) endedFlags(consumed []string) bool {
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

// NoEnv exempts flags from the TXINBOX_* variables: a command line value
// only (the demo's broker flags, whose variables name serve's production
// brokers).
func (fs *FlagSet) NoEnv(names ...string) {
	if fs.local == nil {
		fs.local = map[string]bool{}
	}
	for _, n := range names {
		fs.local[n] = true
	}
}

// fromEnv sets the flags not set yet from their environment variables.
func (fs *FlagSet) fromEnv(getenv func(string) string) error {
	if getenv == nil {
		return nil
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		v := getenv(EnvName(f.Name))
		if set[f.Name] || fs.local[f.Name] || v == "" || err != nil {
			return
		}
		if serr := fs.Set(f.Name, v); serr != nil {
			err = fmt.Errorf("environment %s: invalid value %q: %s", EnvName(f.Name), v, valueWords(serr.Error()))
			return
		}
		if fs.envSet == nil {
			fs.envSet = map[string]string{}
		}
		fs.envSet[f.Name] = EnvName(f.Name)
	})
	return err
}

var badValue = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-([^:]+): (.*)$`)

// valueWords is a flag value's error in the help's words: the flag
// package says only "parse error" for a bad boolean.
func valueWords(msg string) string {
	if msg == "parse error" {
		return "use true or false"
	}
	return msg
}

// FlagError rewrites the flag package's parse errors in the words of the
// help: --name, and the value's own message when it names the flag.
func FlagError(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return "--" + strings.TrimLeft(name, "-") + " needs a value"
	}
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return "unknown flag --" + strings.TrimLeft(name, "-")
	}
	if m := badValue.FindStringSubmatch(msg); m != nil {
		if strings.HasPrefix(m[3], "--"+m[2]) {
			return m[3]
		}
		return fmt.Sprintf("--%s: invalid value %q: %s", m[2], m[1], valueWords(m[3]))
	}
	return msg
}
