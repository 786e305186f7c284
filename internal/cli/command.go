// Package cli implements the txinbox command line. cmd/txinbox/main.go only
// calls Main, so every command can be run and tested in-process.
//
// # Commands
//
// Each command is a type that implements command: info says its name,
// usage line (with the positional arguments), description, examples and
// exit codes; define adds its flags to a flagSet; run does the work with
// the flags parsed and the positional arguments checked. A command with
// subcommands (dlq, drift, relay) is a parent: it lists them in
// commandInfo.Subcommands and may name a Default one. The commands are
// listed by commands(), built anew for each Main call: nothing is global,
// and there is no registration by init().
//
// Main parses flags wherever they stand among the positional arguments
// (flag.FlagSet stops at the first one), reads every flag the command line
// left unset from TXINBOX_<NAME> (--foo-bar: TXINBOX_FOO_BAR), checks the
// required flags and the number of arguments, and answers -h and --help
// for every command on stdout with exit 0.
//
// # Flag groups
//
// Help shows a command's flags by topic. In define, wrap the definitions
// of one topic in fs.group:
//
//	fs.group("Database", func() { c.db.register(fs.FlagSet, env) })
//	fs.group("Kafka source", func() { intFlag(fs.FlagSet, &c.batch, "kafka-batch", 100, 1, "...") })
//
// or, for code that defines its flags on a plain *flag.FlagSet, sort them
// afterwards by name with fs.groupPrefix("Kafka source", "kafka-"). Flags
// in no group are shown first, under "Flags". serve's flags are sorted
// that way (serveCommand.define), without touching the code that defines
// them.
package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
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
}

// StdEnv returns the process's own environment.
func StdEnv() *Env {
	fi, err := os.Stderr.Stat()
	tty := err == nil && fi.Mode()&os.ModeCharDevice != 0
	return &Env{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin, Getenv: os.Getenv, IsTerminal: tty}
}

// command is one txinbox command or subcommand.
type command interface {
	// info describes the command for help, completion and dispatch.
	info() commandInfo
	// define adds the command's flags, bound to its own fields.
	define(fs *flagSet, env *Env)
	// run does the work, once the flags are parsed and the number of
	// positional arguments (in.args) matches the usage line.
	run(ctx context.Context, in *invocation) int
}

// commandInfo describes a command.
type commandInfo struct {
	Name string
	// Args are the positional arguments of the usage line: NAME is one,
	// [NAME] an optional one, NAME... one or more. Main checks their count.
	Args string
	// Summary is one line for the list of commands.
	Summary string
	// Description is the help's text: paragraphs separated by blank lines.
	Description string
	Examples    []example
	// ExitCodes say what each exit status means for this command.
	ExitCodes []exitCode
	// Hidden commands are internal (the demo's child processes): not
	// listed, not completed.
	Hidden bool
	// Subcommands make this a parent command; Default, if set, is the
	// subcommand run when the first argument is a flag or there is none.
	Subcommands []command
	Default     string
}

type example struct{ command, what string }

type exitCode struct {
	code int
	what string
}

// invocation is one parsed command line of a leaf command.
type invocation struct {
	env  *Env
	path string // "txinbox dlq show", for messages
	args []string
	fs   *flagSet
}

// fail prints "path: message" to stderr and returns code.
func (in *invocation) fail(code int, format string, a ...any) int {
	fmt.Fprintf(in.env.Stderr, "%s: %s\n", in.path, fmt.Sprintf(format, a...))
	return code
}

// find is the command named name among cs, or nil.
func find(cs []command, name string) command {
	for _, c := range cs {
		if c.info().Name == name {
			return c
		}
	}
	return nil
}

// execute runs c, a command or a parent of subcommands, with its arguments.
func execute(ctx context.Context, env *Env, path string, c command, args []string) int {
	info := c.info()
	if len(info.Subcommands) > 0 {
		return executeParent(ctx, env, path, info, args)
	}
	if r, ok := c.(rawCommand); ok {
		return r.runRaw(ctx, env, args)
	}
	fs := newFlagSet(path)
	c.define(fs, env)
	pos, err := fs.parse(args, env.Getenv)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printHelp(env.Stdout, path, c, env)
		return ExitOK
	case err != nil:
		return usageError(env, path, flagError(err))
	}
	if msg := cmp.Or(checkArgs(info.Args, pos), fs.missing()); msg != "" {
		return usageError(env, path, msg)
	}
	return c.run(ctx, &invocation{env: env, path: path, args: pos, fs: fs})
}

// executeParent runs the subcommand that args name, or the default one.
func executeParent(ctx context.Context, env *Env, path string, info commandInfo, args []string) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		printParentHelp(env.Stdout, path, info)
		return ExitOK
	}
	if len(args) > 0 {
		if sub := find(info.Subcommands, args[0]); sub != nil {
			return execute(ctx, env, path+" "+args[0], sub, args[1:])
		}
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return usageError(env, path, fmt.Sprintf("unknown subcommand %q: use %s", args[0], subNames(info)))
	}
	if info.Default == "" {
		return usageError(env, path, "give a subcommand: "+subNames(info))
	}
	for _, a := range args {
		if find(info.Subcommands, a) != nil && a != info.Default {
			return usageError(env, path, fmt.Sprintf("put the subcommand first: %s %s ...", path, a))
		}
	}
	return execute(ctx, env, path+" "+info.Default, find(info.Subcommands, info.Default), args)
}

func subNames(info commandInfo) string {
	var names []string
	for _, s := range info.Subcommands {
		names = append(names, s.info().Name)
	}
	return strings.Join(names, ", ")
}

// usageError prints one line and where to find help, and returns ExitUsage.
func usageError(env *Env, path, msg string) int {
	fmt.Fprintf(env.Stderr, "%s: %s\nRun '%s -h' for help.\n", path, msg, path)
	return ExitUsage
}

// checkArgs checks the number of positional arguments against the usage
// line's (see commandInfo.Args); "" when it fits.
func checkArgs(spec string, args []string) string {
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
	return ""
}

// parentCommand is a command made of subcommands (commandInfo.Subcommands).
type parentCommand struct{ commandInfo }

func (p *parentCommand) info() commandInfo                    { return p.commandInfo }
func (p *parentCommand) define(*flagSet, *Env)                {}
func (p *parentCommand) run(context.Context, *invocation) int { return ExitUsage } // Main runs a subcommand

// rawCommand is an internal command that parses its own arguments: the
// demo's child processes, which the demo starts with exact flags.
type rawCommand struct {
	name string
	fn   func(ctx context.Context, env *Env, args []string) int
}

func (r rawCommand) info() commandInfo {
	return commandInfo{Name: r.name, Hidden: true, Summary: "internal: a child process of txinbox demo"}
}

func (rawCommand) define(*flagSet, *Env) {}

func (r rawCommand) run(ctx context.Context, in *invocation) int { return r.fn(ctx, in.env, in.args) }

func (r rawCommand) runRaw(ctx context.Context, env *Env, args []string) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintf(env.Stdout, "Usage: txinbox %s [flags]\n\nAn internal command: a child process that txinbox demo starts.\n", r.name)
		return ExitOK
	}
	return r.fn(ctx, env, args)
}
