// Package table holds what the outbox tables of both databases
// (outbox/outboxpg, outbox/outboxlite) check and encode the same way, so
// that the two give the same errors and write the same columns.
package table

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/txinbox/txinbox/outbox"
)

// Row validates e for Add and returns it with a non-nil Payload, and its
// headers column: nil when e has no headers, else outbox.EncodeHeaders.
func Row(e outbox.Entry) (outbox.Entry, *string, error) {
	switch {
	case e.Scope == "":
		return e, nil, errors.New("outbox: Add: Entry.Scope is empty")
	case e.MessageID == "":
		return e, nil, errors.New("outbox: Add: Entry.MessageID is empty")
	case e.Part < 0:
		return e, nil, fmt.Errorf("outbox: Add: Entry.Part is %d, must not be negative", e.Part)
	}
	if e.Payload == nil {
		e.Payload = []byte{}
	}
	if len(e.Headers) == 0 {
		return e, nil, nil
	}
	s, err := outbox.EncodeHeaders(e.Headers)
	if err != nil {
		return e, nil, fmt.Errorf("outbox: Entry.Headers: %w", err)
	}
	return e, &s, nil
}

// ValidateLimit checks the limit of ListFailed and PurgeSent.
func ValidateLimit(limit int) error {
	if limit <= 0 {
		return fmt.Errorf("outbox: limit %d: must be positive", limit)
	}
	return nil
}

// ValidatePurge checks the arguments of PurgeSent.
func ValidatePurge(olderThan time.Time, limit int) error {
	if err := ValidateLimit(limit); err != nil {
		return err
	}
	if olderThan.IsZero() {
		return errors.New("outbox: PurgeSent: olderThan is zero")
	}
	return nil
}

// AuditDetail is the detail column of an outbox replay in the audit table
// (outbox.AuditAction): {"outbox_id", "part"}.
func AuditDetail(id int64, part int) string {
	b, _ := json.Marshal(map[string]int64{"outbox_id": id, "part": int64(part)}) //nolint:errcheck // ints
	return string(b)
}
