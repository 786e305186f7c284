// Command txinbox runs the Transactional Inbox: a demo, migrations, EDI key
// extraction, admin commands and benchmarks. Its logic lives in internal/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/txinbox/txinbox/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, cli.StdEnv(), os.Args[1:])
	stop()
	os.Exit(code)
}
