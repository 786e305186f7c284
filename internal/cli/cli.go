// Package cli implements the txinbox command line. cmd/txinbox/main.go only
// calls Main, so every command can be run and tested in-process.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
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

type command struct {
	summary string
	run     func(ctx context.Context, env *Env, args []string) int
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, env *Env, args []string) int) {
	commands[name] = command{summary: summary, run: run}
}

// Main runs the command named by args[0] and returns the process exit status.
func Main(ctx context.Context, env *Env, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(env.Stderr)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "txinbox: unknown command %q\n\n", args[0])
		usage(env.Stderr)
		return ExitUsage
	}
	return c.run(ctx, env, args[1:])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: txinbox COMMAND [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if commands[n].summary != "" {
			fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
		}
	}
	fmt.Fprintln(w, "\nRun 'txinbox COMMAND -h' for a command's flags.")
}
