// Package clikit is the framework of the txinbox command line: the Command
// type, its flags (FlagSet, with groups, required flags and TXINBOX_*
// variables), help, the one duration syntax, the --config file, the log
// flags and the inbox database opener. Each command package (serve, bench,
// demo, and the admin commands in package cli) builds on it; package cli
// lists the commands and runs them. clikit imports no command.
//
// # Commands
//
// Each command is a type that implements Command: Info says its name,
// usage line (with the positional arguments), description, examples and
// exit codes; Define adds its flags to a FlagSet; Run does the work with
// the flags parsed and the positional arguments checked. A command with
// subcommands (dlq, drift, relay) is a parent: it lists them in
// CommandInfo.Subcommands and may name a Default one. Package cli lists
// the commands, built anew for each Main call: nothing is global, and
// there is no registration by init().
//
// Execute parses flags wherever they stand among the positional arguments
// (flag.FlagSet stops at the first one), reads every flag the command line
// left unset from TXINBOX_<NAME> (--foo-bar: TXINBOX_FOO_BAR), checks the
// required flags and the number of arguments, and answers -h and --help
// for every command on stdout with exit 0.
//
// # Flag groups
//
// Help shows a command's flags by topic. In Define, wrap the definitions
// of one topic in fs.Group:
//
//	fs.Group("Database", func() { c.db.Register(fs.FlagSet, env) })
//	fs.Group("Kafka source", func() { IntFlag(fs.FlagSet, &c.batch, "kafka-batch", 100, 1, "...") })
//
// or, for code that defines its flags on a plain *flag.FlagSet, sort them
// afterwards by name with fs.GroupPrefix("Kafka source", "kafka-"). Flags
// in no group are shown first, under "Flags". serve's flags are sorted
// that way (serve.Command.Define), without touching the code that defines
// them.
package clikit

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// Exit statuses shared by all commands.
const (
	ExitOK      = 0
	ExitFailure = 1 // the command ran and found a failure (e.g. a double effect)
	ExitUsage   = 2 // bad flags, bad input, or nothing usable in the input
)

// Env is what a command may touch of the outside world.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
	Stdin  io.Reader
	Getenv func(string) string
	// IsTerminal reports whether Stderr is a terminal (progress lines are
	// printed only then).
	IsTerminal bool
	// fromEnv maps each flag that a TXINBOX_* variable set to that
	// variable, so that an error about the flag's value names where the
	// value came from (UsageError, Invocation.Fail). Execute fills it in
	// the Env it gives the command.
	fromEnv map[string]string
}

// located is msg, an error about a flag's value when it starts with the
// flag's name ("--retention: ..."), prefixed with the variable the value
// came from if it came from the environment: the command line's and a
// --config file's values are named already (the flag, the file's line).
func (env *Env) located(msg string) string {
	if m := flagNameRE.FindStringSubmatch(msg); m != nil && env.fromEnv[m[1]] != "" {
		return "environment " + env.fromEnv[m[1]] + ": " + msg
	}
	return msg
}

// StdEnv returns the process's own environment.
func StdEnv() *Env {
	fi, err := os.Stderr.Stat()
	tty := err == nil && fi.Mode()&os.ModeCharDevice != 0
	return &Env{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin, Getenv: os.Getenv, IsTerminal: tty}
}

// Command is one txinbox command or subcommand.
type Command interface {
	// Info describes the command for help, completion and dispatch.
	Info() CommandInfo
	// Define adds the command's flags, bound to its own fields.
	Define(fs *FlagSet, env *Env)
	// Run does the work, once the flags are parsed and the number of
	// positional arguments (in.args) matches the usage line.
	Run(ctx context.Context, in *Invocation) int
}

// CommandInfo describes a command.
type CommandInfo struct {
	Name string
	// Args are the positional arguments of the usage line: NAME is one,
	// [NAME] an optional one, NAME... one or more. Main checks their count.
	Args string
	// Summary is one line for the list of commands.
	Summary string
	// Description is the help's text: paragraphs separated by blank lines.
	Description string
	Examples    []Example
	// ExitCodes say what each exit status means for this command.
	ExitCodes []ExitCode
	// Hidden commands are internal (the demo's child processes): not
	// listed, not completed.
	Hidden bool
	// Subcommands make this a parent command; Default, if set, is the
	// subcommand run when the first argument is a flag or there is none.
	Subcommands []Command
	Default     string
}

// Example is one example of a command's help: the command line and, if
// not empty, what it does.
type Example struct{ Command, What string }

// ExitCode says what an exit status means for a command.
type ExitCode struct {
	Code int
	What string
}

// Invocation is one parsed command line of a leaf command.
type Invocation struct {
	// Env is the outside world the command may touch.
	Env *Env
	// Path is the command's name for messages: "txinbox dlq show".
	Path string
	// Args are the positional arguments, their number checked.
	Args []string
	// Flags are the command's flags, parsed.
	Flags *FlagSet
}

// Fail prints "path: message" to stderr and returns code.
func (in *Invocation) Fail(code int, format string, a ...any) int {
	fmt.Fprintf(in.Env.Stderr, "%s: %s\n", in.Path, Clip(in.Env.located(fmt.Sprintf(format, a...))))
	return code
}

// maxMessage is the most bytes of an error message printed: a huge value
// in it (a 100 kB --schema) is cut in the middle.
const maxMessage = 2000

// Clip cuts msg, an error message, to about 2,000 bytes, keeping its start
// and end: a huge value in it (a 100 kB --schema) is not printed whole.
func Clip(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	head, tail := maxMessage/2, len(msg)-maxMessage/2
	for head > 0 && !utf8.RuneStart(msg[head]) {
		head--
	}
	for tail < len(msg) && !utf8.RuneStart(msg[tail]) {
		tail++
	}
	return fmt.Sprintf("%s[... %d bytes ...]%s", msg[:head], tail-head, msg[tail:])
}

// Find is the command named name among cs, or nil.
func Find(cs []Command, name string) Command {
	for _, c := range cs {
		if c.Info().Name == name {
			return c
		}
	}
	return nil
}

// Execute runs c, a command or a parent of subcommands, with its arguments.
func Execute(ctx context.Context, env *Env, path string, c Command, args []string) int {
	info := c.Info()
	if len(info.Subcommands) > 0 {
		return executeParent(ctx, env, path, info, args)
	}
	if r, ok := c.(RawCommand); ok {
		return r.runRaw(ctx, env, args)
	}
	fs := NewFlagSet(path)
	c.Define(fs, env)
	pos, err := fs.ParseAll(args, env.Getenv)
	switch {
	case errors.Is(err, flag.ErrHelp):
		PrintHelp(env.Stdout, path, c, env)
		return ExitOK
	case err != nil:
		return UsageError(env, path, FlagError(err))
	}
	if msg := cmp.Or(CheckArgs(info.Args, pos), fs.Missing()); msg != "" {
		return UsageError(env, path, msg)
	}
	if len(fs.envSet) > 0 {
		withOrigins := *env
		withOrigins.fromEnv = fs.envSet
		env = &withOrigins
	}
	return c.Run(ctx, &Invocation{Env: env, Path: path, Args: pos, Flags: fs})
}

// executeParent runs the subcommand that args name, or the default one.
func executeParent(ctx context.Context, env *Env, path string, info CommandInfo, args []string) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		PrintParentHelp(env.Stdout, path, info)
		return ExitOK
	}
	if len(args) > 0 {
		if sub := Find(info.Subcommands, args[0]); sub != nil {
			return Execute(ctx, env, path+" "+args[0], sub, args[1:])
		}
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return UsageError(env, path, fmt.Sprintf("unknown subcommand %q: use %s", args[0], subNames(info)))
	}
	if info.Default == "" {
		return UsageError(env, path, "give a subcommand: "+subNames(info))
	}
	def := Find(info.Subcommands, info.Default)
	if sub := misplacedSubcommand(env, def, info.Subcommands, args); sub != "" {
		return UsageError(env, path, fmt.Sprintf("put the subcommand first: %s %s ...", path, sub))
	}
	return Execute(ctx, env, path+" "+info.Default, def, args)
}

// misplacedSubcommand is the subcommand that args, given to the default
// subcommand def, hold as their first positional argument ("drift --db X
// show 1"), or "". A flag's value that names one ("dlq --scope show") is
// a value.
func misplacedSubcommand(env *Env, def Command, subs []Command, args []string) string {
	fs := NewFlagSet("")
	def.Define(fs, env)
	pos, err := fs.ParseAll(args, nil)
	if err != nil || len(pos) == 0 || Find(subs, pos[0]) == nil {
		return ""
	}
	return pos[0]
}

func subNames(info CommandInfo) string {
	var names []string
	for _, s := range info.Subcommands {
		names = append(names, s.Info().Name)
	}
	return strings.Join(names, ", ")
}

// UsageError prints one line and where to find help, and returns ExitUsage.
func UsageError(env *Env, path, msg string) int {
	fmt.Fprintf(env.Stderr, "%s: %s\nRun '%s -h' for help.\n", path, Clip(env.located(msg)), path)
	return ExitUsage
}

// CheckArgs checks the number of positional arguments against the usage
// line's (see CommandInfo.Args); "" when it fits.
func CheckArgs(spec string, args []string) string {
	lo, hi := 0, 0
	for _, w := range strings.Fields(spec) {
		if strings.HasSuffix(w, "...") || strings.HasSuffix(w, "...]") {
			hi = -1
		} else if hi >= 0 {
			hi++
		}
		if !strings.HasPrefix(w, "[") {
			lo++
		}
	}
	switch {
	case len(args) < lo:
		return "no " + strings.Trim(strings.Fields(spec)[len(args)], "[].") + " given"
	case hi >= 0 && len(args) > hi && hi == 0:
		return fmt.Sprintf("unexpected argument %q (this command takes flags only)", args[0])
	case hi >= 0 && len(args) > hi:
		return fmt.Sprintf("unexpected argument %q (usage: %s)", args[hi], spec)
	}
	names := strings.Fields(spec)
	for i, a := range args {
		if a == "" { // never a name, an id or a file
			return strings.Trim(names[min(i, len(names)-1)], "[].") + " is empty"
		}
	}
	return ""
}

// ParentCommand is a command made of subcommands (CommandInfo.Subcommands).
type ParentCommand struct{ CommandInfo }

// Info describes the parent and its subcommands.
func (p *ParentCommand) Info() CommandInfo { return p.CommandInfo }

// Define defines no flags: the subcommands have them.
func (p *ParentCommand) Define(*FlagSet, *Env) {}

// Run is never called: Execute runs a subcommand.
func (p *ParentCommand) Run(context.Context, *Invocation) int { return ExitUsage }

// RawCommand is an internal command that parses its own arguments: the
// demo's child processes, which the demo starts with exact flags.
type RawCommand struct {
	Name string
	Func func(ctx context.Context, env *Env, args []string) int
}

// Info describes the command as hidden.
func (r RawCommand) Info() CommandInfo {
	return CommandInfo{Name: r.Name, Hidden: true, Summary: "internal: a child process of txinbox demo"}
}

// Define defines no flags: Func parses its own.
func (RawCommand) Define(*FlagSet, *Env) {}

// Run calls Func with the arguments.
func (r RawCommand) Run(ctx context.Context, in *Invocation) int { return r.Func(ctx, in.Env, in.Args) }

func (r RawCommand) runRaw(ctx context.Context, env *Env, args []string) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintf(env.Stdout, "Usage: txinbox %s [flags]\n\nAn internal command: a child process that txinbox demo starts.\n", r.Name)
		return ExitOK
	}
	return r.Func(ctx, env, args)
}
