package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/outbox"
)

// printOutboxStatus is the outbox part of txinbox status.
func printOutboxStatus(w io.Writer, s outbox.Stats, err error) {
	if err != nil {
		fmt.Fprintf(w, "outbox\tunavailable: %v\n", err)
		return
	}
	fmt.Fprintf(w, "outbox unsent (backlog)\t%d (%d retrying)\n", s.Unsent, s.Retrying)
	if !s.OldestUnsent.IsZero() {
		fmt.Fprintf(w, "oldest unsent outbox row\t%s (%s ago)\n", s.OldestUnsent.UTC().Format(time.RFC3339),
			time.Since(s.OldestUnsent).Round(time.Second))
	}
	fmt.Fprintf(w, "outbox failed\t%d\n", s.Failed)
	fmt.Fprintf(w, "outbox sent (not purged)\t%d\n", s.Sent)
}

// outboxJSON is the outbox part of txinbox status --json.
func outboxJSON(s outbox.Stats, err error) any {
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	age := any(nil)
	if !s.OldestUnsent.IsZero() {
		age = time.Since(s.OldestUnsent).Seconds()
	}
	return map[string]any{"unsent": s.Unsent, "retrying": s.Retrying, "oldest_unsent": clikit.TimeOrNil(s.OldestUnsent),
		"oldest_unsent_age_seconds": age, "failed": s.Failed, "sent": s.Sent}
}
