package benchsys

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
)

// StartBusy starts n CPU-bound processes, each a shell loop in a session
// of its own, as other programs on the machine are (Linux shares the CPU
// among sessions first, then among a session's processes: see
// docs/benchmarks.md). stop kills them and waits for them. Outside the
// bench's session, a Ctrl-C does not reach them: they are killed when
// the bench ends, and by the kernel if it dies (Pdeathsig), so that none
// is left spinning.
func StartBusy(ctx context.Context, n int) (stop func(), err error) {
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			c.Process.Kill() //nolint:errcheck // it may be gone already
			c.Wait()         //nolint:errcheck // killed
		}
	}
	for range n {
		c := exec.CommandContext(ctx, "/bin/sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("light-busy: starting a CPU-bound process: %w", err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}
