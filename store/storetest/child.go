package storetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/txinbox/txinbox"
)

const (
	envChild   = "TXINBOX_STORETEST_CHILD"
	envIDs     = "TXINBOX_STORETEST_IDS"
	envReverse = "TXINBOX_STORETEST_REVERSE"
)

// RunChild must be called first in the TestMain of a package that runs the
// suite: when the test binary was started as a child process by the suite,
// it runs the child's work and exits; otherwise it returns at once.
func RunChild[TTx any](h Harness[TTx]) {
	desc := os.Getenv(envChild)
	if desc == "" {
		return
	}
	if err := runChild(h, desc); err != nil {
		fmt.Fprintln(os.Stderr, "storetest child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runChild[TTx any](h Harness[TTx], desc string) error {
	ctx := context.Background()
	d, closeFn, err := h.Open(ctx, desc)
	if err != nil {
		return err
	}
	defer closeFn()
	p, err := txinbox.NewProcessor(d, txinbox.Config[TTx]{Scope: scope,
		Handler: func(ctx context.Context, tx TTx, m *txinbox.Message) error {
			return h.InsertEffect(ctx, tx, m.Scope, m.ID)
		}})
	if err != nil {
		return err
	}
	ids := strings.Split(os.Getenv(envIDs), ",")
	if os.Getenv(envReverse) != "" {
		slices.Reverse(ids)
	}
	// Both children start together: each waits for a line on stdin.
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	counts := map[string]int{}
	for start := 0; start < len(ids); start += 10 {
		var msgs []*txinbox.Message
		for _, id := range ids[start:min(start+10, len(ids))] {
			msgs = append(msgs, msg(id, "same payload"))
		}
		res, err := p.Process(ctx, msgs)
		if err != nil {
			return err
		}
		for _, r := range res {
			counts[r.Outcome.String()]++
		}
	}
	return json.NewEncoder(os.Stdout).Encode(counts)
}

func testTwoProcesses[TTx any](f *fixture[TTx]) {
	var ids []string
	want := map[string]int{}
	for i := range 200 {
		id := fmt.Sprint("proc-", i)
		ids = append(ids, id)
		want[scope+"/"+id] = 1
	}
	type child struct {
		cmd   *exec.Cmd
		out   strings.Builder
		stdin *os.File
	}
	var children []*child
	for i := range 2 {
		c := &child{cmd: exec.Command(os.Args[0], "-test.run=^$")}
		c.cmd.Env = append(os.Environ(), envChild+"="+f.desc, envIDs+"="+strings.Join(ids, ","))
		if i == 1 {
			c.cmd.Env = append(c.cmd.Env, envReverse+"=1")
		}
		c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
		r, w, err := os.Pipe()
		if err != nil {
			f.t.Fatal(err)
		}
		c.cmd.Stdin, c.stdin = r, w
		if err := c.cmd.Start(); err != nil {
			f.t.Fatal(err)
		}
		r.Close()
		children = append(children, c)
	}
	for _, c := range children {
		fmt.Fprintln(c.stdin, "go")
		c.stdin.Close()
	}
	processed := 0
	for i, c := range children {
		if err := c.cmd.Wait(); err != nil {
			f.t.Fatalf("child %d: %v\n%s", i, err, c.out.String())
		}
		var counts map[string]int
		if err := json.Unmarshal([]byte(c.out.String()), &counts); err != nil {
			f.t.Fatalf("child %d output %q: %v", i, c.out.String(), err)
		}
		processed += counts["processed"]
		if counts["processed"]+counts["duplicate"] != len(ids) {
			f.t.Errorf("child %d outcomes %v", i, counts)
		}
	}
	if processed != len(ids) {
		f.t.Errorf("processed %d in total over two processes, want %d", processed, len(ids))
	}
	f.wantEffects(want)
}
