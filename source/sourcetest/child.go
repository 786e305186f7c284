package sourcetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/txinbox/txinbox"
)

const envChild = "TXINBOX_SOURCETEST_CHILD"

// crashPointLine is what a child prints when it reached its crash point
// and waits to be SIGKILLed.
const crashPointLine = "CRASH-POINT"

// Crash points of a child consumer.
const (
	// crashInHandler: the handler wrote its effect; the transaction is
	// open, nothing committed.
	crashInHandler = "in-handler"
	// crashAfterCommit: a batch with new messages committed; the source
	// has not acked it (the hook runs inside Process).
	crashAfterCommit = "after-commit"
)

// childSpec tells a child process what to consume and where to stop.
type childSpec struct {
	Desc  string  `json:"desc"`
	DB    childDB `json:"db"`
	Crash string  `json:"crash"`
}

// RunChild must be called first in the TestMain of a package that runs the
// suite: when the test binary was started as a child consumer by the
// suite, it consumes until its crash point, waits there to be SIGKILLed
// and never returns; otherwise it returns at once.
func RunChild(h Harness) {
	specJSON := os.Getenv(envChild)
	if specJSON == "" {
		return
	}
	err := runChild(h, specJSON)
	fmt.Fprintln(os.Stderr, "sourcetest child:", err)
	os.Exit(1)
}

func runChild(h Harness, specJSON string) error {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return err
	}
	ctx := context.Background()
	db, err := openChild(ctx, spec.DB)
	if err != nil {
		return err
	}
	b, err := h.Open(ctx, spec.Desc)
	if err != nil {
		return err
	}
	effect := func(ctx context.Context, tx txn, m *txinbox.Message) error { return tx.effect(ctx, m.ID) }
	inbox := Inbox{Scope: scope, Logger: quietLogger(), db: db, s: settings{handler: effect, maxBatchSize: 20}}
	switch spec.Crash {
	case crashInHandler:
		inbox.s.handler = func(ctx context.Context, tx txn, m *txinbox.Message) error {
			if err := effect(ctx, tx, m); err != nil {
				return err
			}
			stopHere()
			return nil
		}
	case crashAfterCommit:
		inbox.s.hooks = []txinbox.Hook{crashHook{}}
	}
	return b.Consume(ctx, inbox)
}

var crashOnce sync.Once

// stopHere announces the crash point and blocks the calling goroutine
// for good: the parent SIGKILLs the process.
func stopHere() {
	crashOnce.Do(func() { fmt.Fprintln(os.Stdout, crashPointLine) })
	select {}
}

// crashHook stops at the end of the first committed batch with new
// messages: its transaction committed, its acks not sent (hooks run inside
// Process, before it returns to the source).
type crashHook struct{}

// OnBatch stops the consumer after a commit.
func (crashHook) OnBatch(_ context.Context, info txinbox.BatchInfo) {
	if info.Err == nil && info.New > 0 {
		stopHere()
	}
}

// killChildAt runs a child consumer until it reports its crash point, then
// SIGKILLs it.
func (f *fixture) killChildAt(crash string) {
	f.t.Helper()
	spec, _ := json.Marshal(childSpec{Desc: f.desc, DB: f.db.child(), Crash: crash}) // strings only
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+string(spec))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	reached := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == crashPointLine {
				reached <- true
				return
			}
		}
		reached <- false
	}()
	select {
	case ok := <-reached:
		cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck // it may be gone
		cmd.Wait()                          //nolint:errcheck // killed
		if !ok {
			f.t.Fatalf("child consumer exited before its crash point %s: %s", crash, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck // it may be gone
		cmd.Wait()                          //nolint:errcheck // killed
		f.t.Fatalf("child consumer did not reach its crash point %s in 30s: %s", crash, stderr.String())
	}
}
