//go:build !unix

package pgstore_test

import "time"

// processCPU is not measured here: the benchmarks' cpu-µs/msg reads 0.
func processCPU() time.Duration { return 0 }
