package clikit

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// Usage lists the commands.
func Usage(w io.Writer, root []Command) {
	fmt.Fprintln(w, "Usage: txinbox COMMAND [flags] [ARGS]\n\nCommands:")
	for _, c := range root {
		if info := c.Info(); !info.Hidden {
			fmt.Fprintf(w, "  %-10s %s\n", info.Name, info.Summary)
		}
	}
	fmt.Fprintln(w, "\nRun 'txinbox help COMMAND' or 'txinbox COMMAND -h' for a command's flags, examples and exit codes.")
	fmt.Fprintln(w, "Every flag can also be set in the environment: --foo-bar as TXINBOX_FOO_BAR (the command line wins).")
}

// HelpFor answers "txinbox help [COMMAND [SUBCOMMAND]]" on stdout.
func HelpFor(env *Env, root []Command, args []string) int {
	if len(args) == 0 || slices.Contains([]string{"-h", "--help", "-help", "help"}, args[0]) {
		Usage(env.Stdout, root)
		return ExitOK
	}
	cs, path := root, "txinbox"
	var c Command
	for _, name := range args {
		if c = Find(cs, name); c == nil {
			return UsageError(env, "txinbox help", fmt.Sprintf("no command %q in %s", name, path))
		}
		path += " " + name
		cs = c.Info().Subcommands
	}
	if info := c.Info(); len(info.Subcommands) > 0 {
		PrintParentHelp(env.Stdout, path, info)
	} else {
		PrintHelp(env.Stdout, path, c, env)
	}
	return ExitOK
}

// PrintParentHelp is the help of a command with subcommands.
func PrintParentHelp(w io.Writer, path string, info CommandInfo) {
	fmt.Fprintf(w, "Usage: %s SUBCOMMAND [flags] [ARGS]\n\n", path)
	printText(w, info.Description)
	fmt.Fprintln(w, "\nSubcommands:")
	for _, s := range info.Subcommands {
		si := s.Info()
		fmt.Fprintf(w, "  %-12s %s\n", strings.TrimSpace(si.Name+" "+si.Args), si.Summary)
	}
	if info.Default != "" {
		fmt.Fprintf(w, "\nWith flags only and no subcommand, it runs %s %s.\n", path, info.Default)
	}
	printExamples(w, info.Examples)
	fmt.Fprintf(w, "\nRun '%s SUBCOMMAND -h' for its flags and exit codes.\n", path)
}

// PrintHelp is the help of a leaf command: usage line, description,
// examples, flags by group, environment and exit codes.
func PrintHelp(w io.Writer, path string, c Command, env *Env) {
	info := c.Info()
	fs := NewFlagSet(path)
	c.Define(fs, env)
	line := path
	if fs.Names() != nil {
		line += " [flags]"
	}
	fmt.Fprintf(w, "Usage: %s\n\n", strings.TrimSpace(line+" "+info.Args))
	printText(w, info.Description)
	printExamples(w, info.Examples)
	PrintFlags(w, fs)
	if names := fs.Names(); len(names) > 0 {
		fmt.Fprintf(w, "\nEnvironment: every flag can be set as TXINBOX_ and its name in upper case with _ for -\n"+
			"(--%s: %s); a flag on the command line wins.\n", names[0], EnvName(names[0]))
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

func printExamples(w io.Writer, ex []Example) {
	if len(ex) == 0 {
		return
	}
	fmt.Fprintln(w, "\nExamples:")
	for _, e := range ex {
		fmt.Fprintf(w, "  %s\n", e.Command)
		if e.What != "" {
			fmt.Fprintf(w, "      %s\n", e.What)
		}
	}
}

func printExitCodes(w io.Writer, codes []ExitCode) {
	if len(codes) == 0 {
		return
	}
	fmt.Fprintln(w, "\nExit codes:")
	for _, c := range codes {
		fmt.Fprintf(w, "  %d  %s\n", c.Code, c.What)
	}
}

// PrintFlags prints the flags: those in no group first, under "Flags",
// then each group in the order it was made.
func PrintFlags(w io.Writer, fs *FlagSet) {
	grouped := fs.grouped()
	var loose []string
	for _, n := range fs.Names() {
		if !grouped[n] {
			loose = append(loose, n)
		}
	}
	groups := append([]*FlagGroup{{Title: "Flags", Names: loose}}, fs.Groups...)
	for _, g := range groups {
		if len(g.Names) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", g.Title)
		for _, n := range g.Names {
			printFlag(w, fs, fs.Lookup(n))
		}
	}
}

func printFlag(w io.Writer, fs *FlagSet, f *flag.Flag) {
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
