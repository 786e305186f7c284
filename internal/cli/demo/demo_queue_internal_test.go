package demo

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestWaitChildKillsAChildThatWillNotLeave: a consumer child still running
// after the limit is killed and reported, not counted as a planned crash;
// one that exits in time is simply waited for.
func TestWaitChildKillsAChildThatWillNotLeave(t *testing.T) {
	stuck := &queueChild{cmd: exec.Command("sleep", "300"), killed: true}
	if err := stuck.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err := waitChild(stuck, 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not exit within 50ms") {
		t.Errorf("waitChild of a stuck child = %v", err)
	}
	if stuck.killed || stuck.cmd.ProcessState == nil || stuck.cmd.ProcessState.Exited() {
		t.Errorf("the stuck child: killed flag %v, state %v; want it killed by a signal and reported", stuck.killed, stuck.cmd.ProcessState)
	}
	quick := &queueChild{cmd: exec.Command("true")}
	if err := quick.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := waitChild(quick, time.Minute); err != nil {
		t.Errorf("waitChild of a child that exits: %v", err)
	}
}
