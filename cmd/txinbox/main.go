// Command txinbox runs the Transactional Inbox: a demo, migrations, EDI key
// extraction, admin commands and benchmarks. Its logic lives in internal/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/txinbox/txinbox/internal/cli"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	// The first SIGINT or SIGTERM starts a graceful stop; a second one ends
	// the process at once, by that signal's default action (nothing is
	// acked that was not committed, so that is safe). Both arrive on one
	// channel, so no second signal is lost between the two.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel()
		s := <-sigs
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		// os.Process.Signal, unlike syscall.Kill, builds everywhere; where
		// it cannot send the signal (Windows), the exit status says it.
		if self, err := os.FindProcess(os.Getpid()); err == nil && self.Signal(s) == nil {
			time.Sleep(time.Second) // delivered asynchronously; it ends the process by the default action
		}
		os.Exit(130)
	}()
	code := cli.Main(ctx, cli.StdEnv(), os.Args[1:])
	cancel()
	os.Exit(code)
}
