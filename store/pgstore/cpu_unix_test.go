//go:build unix

package pgstore_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the test process used so
// far, for the benchmarks' cpu-µs/msg.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
