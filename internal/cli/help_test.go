package cli

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// mainOut runs Main in-process with an empty environment.
func mainOut(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &clikit.Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	code := Main(context.Background(), env, args)
	return out.String(), errb.String(), code
}

// leaf is one runnable command line: its words and its command.
type leaf struct {
	path []string
	cmd  clikit.Command
}

// leaves are every visible command and subcommand that runs.
func leaves() []leaf {
	var out []leaf
	for _, c := range commands() {
		info := c.Info()
		if info.Hidden {
			continue
		}
		if len(info.Subcommands) == 0 {
			out = append(out, leaf{[]string{info.Name}, c})
		}
		for _, s := range info.Subcommands {
			out = append(out, leaf{[]string{info.Name, s.Info().Name}, s})
		}
	}
	return out
}

// TestEveryCommandHasHelp: -h, --help and "txinbox help CMD" print, for
// every command and subcommand, on stdout with exit 0, a usage line with
// its positional arguments, a description, examples, the environment rule
// and its exit codes.
func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	for _, l := range leaves() {
		info, name := l.cmd.Info(), strings.Join(l.path, " ")
		if info.Summary == "" || info.Description == "" || len(info.Examples) == 0 || len(info.ExitCodes) < 2 {
			t.Errorf("%s: summary %q, description %q, %d examples, %d exit codes", name, info.Summary, info.Description, len(info.Examples), len(info.ExitCodes))
		}
		var first string
		for i, args := range [][]string{append(append([]string{}, l.path...), "-h"), append(append([]string{}, l.path...), "--help"), append([]string{"help"}, l.path...)} {
			out, errs, code := mainOut(t, args...)
			if code != clikit.ExitOK || errs != "" {
				t.Errorf("%v: exit %d, stderr %q", args, code, errs)
			}
			usage := strings.TrimSpace("Usage: txinbox " + name + " [flags] " + info.Args)
			if _, ok := l.cmd.(*completionCommand); ok {
				usage = "Usage: txinbox completion SHELL"
			}
			for _, want := range []string{usage + "\n", "Examples:\n", "Exit codes:\n  0  ", "\n  2  "} {
				if !strings.Contains(out, want) {
					t.Errorf("%v: help lacks %q:\n%s", args, want, out)
				}
			}
			for _, line := range strings.Split(out, "\n") {
				// Each command's exit codes are its own, not another's.
				if strings.Contains(line, "  1  ") && strings.Contains(line, "(") && strings.Contains(line, ") ") {
					if sub := regexp.MustCompile(`\((\w+)\) `).FindStringSubmatch(line); sub != nil && sub[1] != l.path[len(l.path)-1] {
						t.Errorf("%v: exit code line for another command: %q", args, line)
					}
				}
				// One duration syntax, and help calls it so.
				if f := strings.Fields(line); len(f) == 2 && strings.HasPrefix(f[0], "--") && f[1] != "duration" && f[0] != "--scope-retention" &&
					regexp.MustCompile(`(retention|retry-window|period|interval|timeout|older-than)$`).MatchString(f[0]) {
					t.Errorf("%v: %s is typed %s, not duration", args, f[0], f[1])
				}
				// "(default X)" is added to the usage unless the usage says it.
				if strings.Contains(line, "default: ") && strings.HasSuffix(line, ")") && strings.Contains(line, ") (default ") {
					t.Errorf("%v: a flag says its default twice: %q", args, line)
				}
			}
			if i == 0 {
				first = out
			} else if out != first {
				t.Errorf("%v: help differs from %s -h", args, name)
			}
		}
	}
}

// TestHelpOfHelp: help answers -h and --help too, on stdout with exit 0,
// with what it takes.
func TestHelpOfHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help", "-h"}, {"help", "--help"}, {"help", "help"}} {
		out, errs, code := mainOut(t, args...)
		if code != clikit.ExitOK || errs != "" || !strings.Contains(out, "txinbox help COMMAND") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
}

// TestParentHelp: a command with subcommands lists them on stdout.
func TestParentHelp(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"dlq", "drift", "relay"} {
		for _, args := range [][]string{{name, "-h"}, {"help", name}} {
			out, errs, code := mainOut(t, args...)
			if code != clikit.ExitOK || errs != "" || !strings.Contains(out, "Subcommands:\n") || !strings.Contains(out, "Usage: txinbox "+name+" SUBCOMMAND") {
				t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
			}
		}
	}
}

// TestBadFlagIsOneLine: an unknown flag prints one line and where help
// is, not the list of flags, and exits 2, for every command.
func TestBadFlagIsOneLine(t *testing.T) {
	t.Parallel()
	for _, l := range leaves() {
		name := "txinbox " + strings.Join(l.path, " ")
		args := append(append([]string{}, l.path...), "--no-such-flag")
		out, errs, code := mainOut(t, args...)
		want := name + ": unknown flag --no-such-flag\nRun '" + name + " -h' for help.\n"
		if code != clikit.ExitUsage || out != "" || errs != want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", args, code, out, errs, want)
		}
	}
}

// TestTopLevelUsage: txinbox alone prints the commands on stderr and
// exits 2; -h and help print them on stdout and exit 0; help of an
// unknown command exits 2.
func TestTopLevelUsage(t *testing.T) {
	t.Parallel()
	if out, errs, code := mainOut(t); code != clikit.ExitUsage || out != "" || !strings.Contains(errs, "Commands:") {
		t.Errorf("no args: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		if out, errs, code := mainOut(t, args...); code != clikit.ExitOK || errs != "" || !strings.Contains(out, "Commands:") || strings.Contains(out, "demo-consumer") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	if _, errs, code := mainOut(t, "help", "frob"); code != clikit.ExitUsage || !strings.Contains(errs, `no command "frob"`) {
		t.Errorf("help frob: exit %d, stderr %q", code, errs)
	}
	if _, errs, code := mainOut(t, "dlq", "show"); code != clikit.ExitUsage || !strings.Contains(errs, "no ID given") {
		t.Errorf("dlq show without ID: exit %d, stderr %q", code, errs)
	}
}

// TestFlagGroups: help shows flags under their groups, in the order made,
// the ungrouped ones first; groupPrefix sorts flags defined elsewhere.
func TestFlagGroups(t *testing.T) {
	t.Parallel()
	fs := clikit.NewFlagSet("x")
	fs.String("loose", "", "not in a group")
	fs.Group("Database", func() { fs.String("db", "", "the database") })
	fs.String("kafka-brokers", "", "brokers")
	fs.GroupPrefix("Kafka", "kafka-")
	fs.Require("db")
	var b bytes.Buffer
	clikit.PrintFlags(&b, fs)
	want := "\nFlags:\n  --loose string\n      not in a group\n\nDatabase:\n  --db string\n      the database (required)\n\nKafka:\n  --kafka-brokers string\n      brokers\n"
	if b.String() != want {
		t.Errorf("flags:\n%s\nwant:\n%s", b.String(), want)
	}
	for _, l := range leaves() { // no group is left empty by an earlier one
		fs := clikit.NewFlagSet("x")
		l.cmd.Define(fs, &clikit.Env{Getenv: func(string) string { return "" }})
		for _, g := range fs.Groups {
			if len(g.Names) == 0 {
				t.Errorf("%v: flag group %q is empty", l.path, g.Title)
			}
		}
	}
	out, _, _ := mainOut(t, "serve", "-h")
	for _, g := range []string{"Database:", "AS4 endpoint:", "Kafka source:", "Outbox relay:", "Retention and purge:", "Operations:"} {
		if !strings.Contains(out, "\n"+g+"\n") {
			t.Errorf("serve -h has no group %q", g)
		}
	}
	if strings.Contains(out, "\nFlags:\n") {
		t.Errorf("serve -h has flags in no group:\n%s", out)
	}
}
