package cli

import (
	"context"
	"fmt"
)

// commands are the top-level commands, in the order help lists them.
func commands() []command {
	return []command{
		&demoCommand{invoicer: runInvoicerDemo}, &migrateCommand{}, &serveCommand{}, relayParent(),
		&statusCommand{}, &inspectCommand{}, &forgetCommand{}, dlqParent(), driftParent(),
		&purgeCommand{}, &keyCommand{}, &benchCommand{},
		&versionCommand{}, &completionCommand{},
		// The demo's child processes.
		rawCommand{"demo-consumer", runDemoConsumer},
		rawCommand{"demo-consumer-amqp", runDemoConsumerAMQP},
		rawCommand{"demo-consumer-kafka", runDemoConsumerKafka},
		rawCommand{"demo-consumer-nats", runDemoConsumerNATS},
		rawCommand{"demo-consumer-sqs", runDemoConsumerSQS},
		rawCommand{"demo-invoicer-consumer", runInvoicerConsumer},
		rawCommand{"demo-invoicer-relay", runInvoicerRelay},
		rawCommand{"demo-invoicer-partner", runInvoicerPartner},
	}
}

// Main runs the command named by args[0] and returns the process exit status.
func Main(ctx context.Context, env *Env, args []string) int {
	root := commands()
	switch {
	case len(args) == 0:
		usage(env.Stderr, root)
		return ExitUsage
	case args[0] == "-h" || args[0] == "--help" || args[0] == "-help":
		usage(env.Stdout, root)
		return ExitOK
	case args[0] == "--version" || args[0] == "-version":
		return (&versionCommand{}).run(ctx, &invocation{env: env, path: "txinbox version"})
	case args[0] == "help":
		return helpFor(env, root, args[1:])
	}
	c := find(root, args[0])
	if c == nil {
		fmt.Fprintf(env.Stderr, "txinbox: unknown command %q\nRun 'txinbox help' for the list of commands.\n", args[0])
		return ExitUsage
	}
	return execute(ctx, env, "txinbox "+args[0], c, args[1:])
}
