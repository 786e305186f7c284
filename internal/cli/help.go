package cli

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// usage lists the commands.
func usage(w io.Writer, root []command) {
	fmt.Fprintln(w, "Usage: txinbox COMMAND [flags] [ARGS]\n\nCommands:")
	for _, c := range root {
		if info := c.info(); !info.Hidden {
			fmt.Fprintf(w, "  %-10s %s\n", info.Name, info.Summary)
		}
	}
	fmt.Fprintln(w, "\nRun 'txinbox help COMMAND' or 'txinbox COMMAND -h' for a command's flags, examples and exit codes.")
	fmt.Fprintln(w, "Every flag can also be set in the environment: --foo-bar as TXINBOX_FOO_BAR (the command line wins).")
}

// helpFor answers "txinbox help [COMMAND [SUBCOMMAND]]" on stdout.
func helpFor(env *Env, root []command, args []string) int {
	if len(args) == 0 {
		usage(env.Stdout, root)
		return ExitOK
	}
	cs, path := root, "txinbox"
	var c command
	for _, name := range args {
		if c = find(cs, name); c == nil {
			return usageError(env, "txinbox help", fmt.Sprintf("no command %q in %s", name, path))
		}
		path += " " + name
		cs = c.info().Subcommands
	}
	if info := c.info(); len(info.Subcommands) > 0 {
		printParentHelp(env.Stdout, path, info)
	} else {
		printHelp(env.Stdout, path, c, env)
	}
	return ExitOK
}

// printParentHelp is the help of a command with subcommands.
func printParentHelp(w io.Writer, path string, info commandInfo) {
	fmt.Fprintf(w, "Usage: %s SUBCOMMAND [flags] [ARGS]\n\n", path)
	printText(w, info.Description)
	fmt.Fprintln(w, "\nSubcommands:")
	for _, s := range info.Subcommands {
		si := s.info()
		fmt.Fprintf(w, "  %-12s %s\n", strings.TrimSpace(si.Name+" "+si.Args), si.Summary)
	}
	if info.Default != "" {
		fmt.Fprintf(w, "\nWith flags only and no subcommand, it runs %s %s.\n", path, info.Default)
	}
	printExamples(w, info.Examples)
	fmt.Fprintf(w, "\nRun '%s SUBCOMMAND -h' for its flags and exit codes.\n", path)
}

// printHelp is the help of a leaf command: usage line, description,
// examples, flags by group, environment and exit codes.
func printHelp(w io.Writer, path string, c command, env *Env) {
	info := c.info()
	fs := newFlagSet(path)
	c.define(fs, env)
	line := path
	if fs.names() != nil {
		line += " [flags]"
	}
	fmt.Fprintf(w, "Usage: %s\n\n", strings.TrimSpace(line+" "+info.Args))
	printText(w, info.Description)
	printExamples(w, info.Examples)
	printFlags(w, fs)
	if names := fs.names(); len(names) > 0 {
		fmt.Fprintf(w, "\nEnvironment: every flag can be set as TXINBOX_ and its name in upper case with _ for -\n"+
			"(--%s: %s); a flag on the command line wins.\n", names[0], envName(names[0]))
		if len(fs.local) > 0 {
			local := make([]string, 0, len(fs.local))
			for n := range fs.local {
				local = append(local, "--"+n)
			}
			sort.Strings(local)
			fmt.Fprintf(w, "Except %s: command line only.\n", strings.Join(local, ", "))
		}
	}
	printExitCodes(w, info.ExitCodes)
}

func printText(w io.Writer, text string) {
	if text = strings.TrimSpace(text); text != "" {
		fmt.Fprintln(w, text)
	}
}

func printExamples(w io.Writer, ex []example) {
	if len(ex) == 0 {
		return
	}
	fmt.Fprintln(w, "\nExamples:")
	for _, e := range ex {
		fmt.Fprintf(w, "  %s\n", e.command)
		if e.what != "" {
			fmt.Fprintf(w, "      %s\n", e.what)
		}
	}
}

func printExitCodes(w io.Writer, codes []exitCode) {
	if len(codes) == 0 {
		return
	}
	fmt.Fprintln(w, "\nExit codes:")
	for _, c := range codes {
		fmt.Fprintf(w, "  %d  %s\n", c.code, c.what)
	}
}

// printFlags prints the flags: those in no group first, under "Flags",
// then each group in the order it was made.
func printFlags(w io.Writer, fs *flagSet) {
	grouped := fs.grouped()
	var loose []string
	for _, n := range fs.names() {
		if !grouped[n] {
			loose = append(loose, n)
		}
	}
	groups := append([]*flagGroup{{title: "Flags", names: loose}}, fs.groups...)
	for _, g := range groups {
		if len(g.names) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, n := range g.names {
			printFlag(w, fs, fs.Lookup(n))
		}
	}
}

func printFlag(w io.Writer, fs *flagSet, f *flag.Flag) {
	typ, usage := flag.UnquoteUsage(f)
	if t, ok := f.Value.(interface{ typeName() string }); ok && !strings.Contains(f.Usage, "`") {
		typ = t.typeName()
	}
	if typ == "value" {
		typ = "string"
	}
	fmt.Fprintln(w, "  "+strings.TrimSpace("--"+f.Name+" "+typ))
	if def := f.DefValue; def != "" && def != "0" && def != "false" && def != "0s" && def != "[]" {
		usage += fmt.Sprintf(" (default %s)", def)
	}
	for _, r := range fs.required {
		if r == f.Name {
			usage += " (required)"
		}
	}
	fmt.Fprintf(w, "      %s\n", usage)
}
