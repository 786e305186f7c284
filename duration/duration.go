// Package duration reads and writes durations the one way txinbox shows
// them, in the CLI's flags and config files, in package server's messages
// and logs, and in the web console: Go's syntax plus days, whole days
// written as days and without trailing zero units (30d, 1d12h, 90s, 1m,
// 250ms). Parse reads what Format writes.
//
// It is a package of its own, importing nothing but the standard library,
// so that a Go program that configures package server (a retention read
// from its own settings, say) reads and prints the same syntax without
// linking anything else.
package duration

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Day is 24 hours: the d of a duration.
const Day = 24 * time.Hour

// Parse reads a duration: Go's syntax (300ms, 1.5h, 2h45m) plus days,
// alone or combined (30d, 1.5d, 1d12h). A sign, if any, comes first and
// applies to the whole. It refuses what a time.Duration cannot hold
// (more than about 106,751 days).
func Parse(s string) (time.Duration, error) {
	rest, neg := strings.CutPrefix(s, "-")
	if !neg {
		rest = strings.TrimPrefix(rest, "+")
	}
	var days time.Duration
	if i := strings.IndexByte(rest, 'd'); i >= 0 {
		n, err := strconv.ParseFloat(rest[:i], 64)
		// The second: n days as nanoseconds must fit an int64 (2^63
		// is the first float64 that does not).
		if err != nil || n < 0 || !(n*float64(Day) < 1<<63) || strings.ContainsAny(rest[:i], "eEnNiIxX_") {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		days, rest = time.Duration(n*float64(Day)), rest[i+1:]
		if rest == "" {
			rest = "0s"
		}
	}
	sign := ""
	if neg {
		sign = "-"
	}
	// time.ParseDuration takes the sign, so that the smallest Duration,
	// whose magnitude no Duration holds, is read too.
	d, err := time.ParseDuration(sign + rest)
	switch {
	case err != nil, !neg && (d < 0 || d > math.MaxInt64-days), neg && d < math.MinInt64+days: // the sum would overflow
		return 0, fmt.Errorf("invalid duration %q", s)
	case neg:
		return d - days, nil
	}
	return d + days, nil
}

// Format writes d with whole days as days and no trailing zero units:
// 720h is "30d", 36h is "1d12h", 60s is "1m", 0 is "0s".
func Format(d time.Duration) string {
	sign, days, rest := "", d/Day, d%Day
	if d < 0 { // negated apart: -d overflows for the smallest Duration
		sign, days, rest = "-", -days, -rest
	}
	short := rest.String() // 12h0m0s, 30m0s, 1m30s, 250ms
	if strings.HasSuffix(short, "m0s") {
		short = strings.TrimSuffix(short, "0s")
	}
	if strings.HasSuffix(short, "h0m") {
		short = strings.TrimSuffix(short, "0m")
	}
	switch {
	case days == 0:
		return sign + short
	case rest == 0:
		return fmt.Sprintf("%s%dd", sign, days)
	}
	return fmt.Sprintf("%s%dd%s", sign, days, short)
}
