package runner

import (
	"fmt"
	"time"
)

// Days formats a horizon for its Figure: "7d" for whole days, else as
// time.Duration does.
func Days(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}
