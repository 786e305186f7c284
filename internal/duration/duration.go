// Package duration writes durations the one way txinbox shows them, in
// its flags, its messages and its logs: Go's syntax with whole days as
// days and without trailing zero units (30d, 1d12h, 90s, 1m, 250ms).
// The CLI's clikit.ParseDuration reads what Format writes.
package duration

import (
	"fmt"
	"strings"
	"time"
)

// Day is 24 hours: the d of a duration.
const Day = 24 * time.Hour

// Format writes d with whole days as days and no trailing zero units:
// 720h is "30d", 36h is "1d12h", 60s is "1m", 0 is "0s".
func Format(d time.Duration) string {
	if d < 0 {
		return "-" + Format(-d)
	}
	days, rest := d/Day, d%Day
	short := rest.String() // 12h0m0s, 30m0s, 1m30s, 250ms
	if strings.HasSuffix(short, "m0s") {
		short = strings.TrimSuffix(short, "0s")
	}
	if strings.HasSuffix(short, "h0m") {
		short = strings.TrimSuffix(short, "0m")
	}
	switch {
	case days == 0:
		return short
	case rest == 0:
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%s", days, short)
}
