package invoicerdemo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/invoicer"
)

// The invoicer demo's supervision: its child processes, started, polled,
// crashed by SIGKILL and restarted until every invoice is delivered.

// progressOf is the role's progress that its crash thresholds refer to.
func (d *invoicerDemo) progressOf(role string) int {
	switch role {
	case "consumer":
		return d.built
	case "relay":
		return d.sent
	}
	return len(d.received)
}

// supervise runs the children until every invoice is delivered and every
// planned crash happened, or the timeout.
func (d *invoicerDemo) supervise(ctx context.Context) error {
	for _, role := range invoicerRoles {
		if err := d.start(role); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(d.o.Invoicer.Timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := d.poll(ctx); err != nil {
			return err
		}
		for _, role := range invoicerRoles {
			if err := d.checkChild(role); err != nil {
				return err
			}
		}
		done := len(d.received) == len(d.events) && d.sent == len(d.events)
		for _, role := range invoicerRoles {
			if s := d.schedule[role]; len(s) > 0 && (done || d.progressOf(role) >= s[0]) && d.children[role].age() > 50*time.Millisecond {
				d.schedule[role] = s[1:]
				if err := d.crash(role); err != nil {
					return err
				}
			}
		}
		if done && d.sum.Crashes == d.o.Crashes {
			return nil
		}
		d.progressLine()
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s: %d of %d invoices built, %d sent, %d delivered to the partner, %d of %d crashes",
				d.o.Invoicer.Timeout, d.built, len(d.events), d.sent, len(d.received), d.sum.Crashes, d.o.Crashes)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (d *invoicerDemo) progressLine() {
	if d.env.IsTerminal && !d.o.JSON {
		fmt.Fprintf(d.env.Stderr, "\rdemo: %d/%d invoices built, %d sent, %d delivered, %d/%d crashes ",
			d.built, len(d.events), d.sent, len(d.received), d.sum.Crashes, d.o.Crashes)
	}
}

// poll reads the progress from the tables.
func (d *invoicerDemo) poll(ctx context.Context) error {
	if err := d.sender.Query(ctx, `SELECT count(*) FROM partner_invoices WHERE run_id = $1`, []any{d.run},
		[]any{&d.built}, func() error { return nil }); err != nil {
		return fmt.Errorf("counting partner_invoices: %w", err)
	}
	if err := d.sender.Query(ctx, `SELECT count(*) FROM `+d.sender.OutboxTable()+
		` WHERE scope = $1 AND message_id LIKE $2 AND sent_at IS NOT NULL`, []any{invoicer.DefaultScope, d.runPattern()},
		[]any{&d.sent}, func() error { return nil }); err != nil {
		return fmt.Errorf("counting sent outbox rows: %w", err)
	}
	// All the run's rows each time, not "id > the last seen": identity
	// values are taken in one order and committed in another, so a row
	// below the last id seen can still appear.
	// By the ConversationId (the event id), not the MessageId: under the
	// fresh-message-id sabotage the MessageIds are not the derived ones.
	received := map[string]int{}
	var conv string
	if err := d.partner.Query(ctx, `SELECT conversation_id FROM `+d.pt.received+` WHERE id > $1`, []any{d.receivedBase},
		[]any{&conv}, func() error {
			if _, ok := d.byID[conv]; ok {
				received[conv]++
			}
			return nil
		}); err != nil {
		return fmt.Errorf("counting received_invoic: %w", err)
	}
	d.received = received
	return nil
}

func (d *invoicerDemo) runPattern() string { return "InvoiceIssued/" + d.run + "/%" }

// invoicerChild is one running child process.
type invoicerChild struct {
	cmd     *exec.Cmd
	stdin   interface{ Close() error }
	stderr  *clikit.TailBuffer
	started time.Time
	exited  chan struct{} // closed when the process is gone
	err     error         // its Wait error, once exited is closed
}

func (c *invoicerChild) age() time.Duration { return time.Since(c.started) }

func (d *invoicerDemo) childArgs(role string) []string {
	f := d.senderF
	var args []string
	switch role {
	case "consumer":
		args = []string{"demo-invoicer-consumer", "--seeds", d.seeds, "--topic", d.topic, "--session-timeout", d.session.String()}
	case "relay":
		args = []string{"demo-invoicer-relay", "--partner-url", "http://" + d.addr + "/as4", "--keys", d.keys}
		switch d.o.Sabotage {
		case sabotageFreshMessageID:
			args = append(args, "--sabotage", sabotageFreshMessageID)
		case sabotageLostReceipts, sabotagePartnerWithoutInbox:
			// The resends the partner's missing inbox lets through.
			args = append(args, "--sabotage", sabotageLostReceipts)
		}
	case "partner":
		args, f = []string{"demo-invoicer-partner", "--listen", d.addr, "--keys", d.keys}, d.partnerF
		if d.o.Sabotage == sabotagePartnerWithoutInbox {
			args = append(args, "--sabotage", sabotagePartnerWithoutInbox)
		}
	}
	args = append(args, "--db", f.URL, "--table-prefix", f.Prefix)
	if f.Schema != "" {
		args = append(args, "--schema", f.Schema)
	}
	return args
}

func (d *invoicerDemo) start(role string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	c := &invoicerChild{cmd: exec.Command(self, d.childArgs(role)...), stderr: &clikit.TailBuffer{}, exited: make(chan struct{})}
	c.cmd.Stderr = c.stderr
	stdin, err := c.cmd.StdinPipe()
	if err != nil {
		return err
	}
	c.stdin = stdin
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("starting the %s: %w", role, err)
	}
	c.started = time.Now()
	go func() {
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	d.children[role] = c
	return nil
}

// checkChild fails the run when a child died on its own: that is a bug,
// not a crash of the schedule.
func (d *invoicerDemo) checkChild(role string) error {
	c := d.children[role]
	select {
	case <-c.exited:
		return fmt.Errorf("the %s exited on its own (%v): %s", role, c.err, c.stderr.String())
	default:
		return nil
	}
}

// crash SIGKILLs the role's child a random fraction of a few milliseconds
// from now, wherever it is, waits for it to die and starts it again.
func (d *invoicerDemo) crash(role string) error {
	c := d.children[role]
	time.Sleep(time.Duration(d.rng.IntN(3000)) * time.Microsecond)
	c.cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck // it may be gone already; Wait tells
	<-c.exited
	d.sum.Crashes++
	d.sum.CrashPoints[role]++
	return d.start(role)
}

// stopAll asks the children to leave (stdin closed), and kills those still
// there after a while.
func (d *invoicerDemo) stopAll() {
	for _, c := range d.children {
		c.stdin.Close()
	}
	for _, c := range d.children {
		select {
		case <-c.exited:
		case <-time.After(15 * time.Second):
			c.cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck // it may be gone already
			<-c.exited
		}
	}
	if d.env.IsTerminal && !d.o.JSON {
		fmt.Fprint(d.env.Stderr, "\r\033[K")
	}
}
