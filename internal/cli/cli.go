// Package cli is the txinbox command line: cmd/txinbox/main.go only calls
// Main, so every command can be run and tested in-process. It lists the
// commands (commands) and holds the admin commands (migrate, status,
// inspect, forget, dlq, drift, purge, key), version and completion; the
// framework they share is package clikit, and serve, bench and demo have
// their own packages.
package cli

import (
	"context"
	"fmt"

	"github.com/txinbox/txinbox/internal/cli/bench"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/internal/cli/demo"
	"github.com/txinbox/txinbox/internal/cli/demo/invoicerdemo"
	"github.com/txinbox/txinbox/internal/cli/serve"
)

// commands are the top-level commands, in the order help lists them.
func commands() []clikit.Command {
	return append([]clikit.Command{
		&demo.Command{Invoicer: invoicerdemo.Run}, &migrateCommand{}, &serve.Command{}, serve.RelayParent(),
		&statusCommand{}, &inspectCommand{}, &forgetCommand{}, dlqParent(), driftParent(),
		&purgeCommand{}, &keyCommand{}, &bench.Command{},
		&versionCommand{}, &completionCommand{},
		// The demo's child processes: the consumers of its brokers
		// (demo.ChildCommands), and the invoicer scenario's.
		clikit.RawCommand{Name: "demo-invoicer-consumer", Func: invoicerdemo.RunConsumer},
		clikit.RawCommand{Name: "demo-invoicer-relay", Func: invoicerdemo.RunRelay},
		clikit.RawCommand{Name: "demo-invoicer-partner", Func: invoicerdemo.RunPartner},
	}, demo.ChildCommands()...)
}

// Main runs the command named by args[0] and returns the process exit status.
func Main(ctx context.Context, env *clikit.Env, args []string) int {
	root := commands()
	switch {
	case len(args) == 0:
		clikit.Usage(env.Stderr, root)
		return clikit.ExitUsage
	case args[0] == "-h" || args[0] == "--help" || args[0] == "-help":
		clikit.Usage(env.Stdout, root)
		return clikit.ExitOK
	case args[0] == "--version" || args[0] == "-version":
		return (&versionCommand{}).Run(ctx, &clikit.Invocation{Env: env, Path: "txinbox version"})
	case args[0] == "help":
		return clikit.HelpFor(env, root, args[1:])
	}
	c := clikit.Find(root, args[0])
	if c == nil {
		fmt.Fprintf(env.Stderr, "txinbox: %s\nRun 'txinbox help' for the list of commands.\n", clikit.Clip(fmt.Sprintf("unknown command %q", args[0])))
		return clikit.ExitUsage
	}
	return clikit.Execute(ctx, env, "txinbox "+args[0], c, args[1:])
}

// Env is what a command may touch of the outside world (clikit.Env).
type Env = clikit.Env

// StdEnv returns the process's own environment.
func StdEnv() *Env { return clikit.StdEnv() }
