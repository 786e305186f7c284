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
	// The first signal starts a graceful stop; a second one gets the
	// default action and ends the process at once (nothing is acked that
	// was not committed, so that is safe).
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := cli.Main(ctx, cli.StdEnv(), os.Args[1:])
	stop()
	os.Exit(code)
}
