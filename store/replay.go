package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNoDeadLetter is returned by ReplayDeadLetter and DropDeadLetterAudited
// for an id that names no dead letter.
var ErrNoDeadLetter = errors.New("store: no dead letter with that id")

// StaleDeadLetterError refuses the replay of a dead letter whose message
// was processed all the same: its inbox row exists (another consumer
// committed it while this one failed, or before the dead letter was
// recorded). A replay would delete that row and run the effect a second
// time on the next delivery; drop the dead letter instead, or forget the
// key to reprocess it deliberately.
type StaleDeadLetterError struct {
	ID          int64
	Key         Key
	ProcessedAt time.Time
}

// Error names the dead letter, its key and when that key was processed,
// and what to do instead of a replay.
func (e *StaleDeadLetterError) Error() string {
	return fmt.Sprintf("dead letter %d is stale: %q (scope %q) was processed at %s (its inbox row exists), "+
		"so a replay would run its effect a second time; drop the dead letter, or forget the key to reprocess it deliberately",
		e.ID, e.Key.MessageID, e.Key.Scope, e.ProcessedAt.UTC().Format(time.RFC3339))
}

// ErrReplayNoID refuses the replay of a dead letter stored without a
// message id: nothing keys it, so no delivery is refused because of it and
// forgetting "" would touch every other such dead letter of its scope.
// Re-publish its payload, then drop it.
var ErrReplayNoID = errors.New("store: a dead letter without a message id cannot be replayed: re-publish its payload, then drop it")

// ReplayDeadLetter re-admits the message of dead letter id, the way
// `txinbox dlq replay` does: it refuses a stale dead letter
// (*StaleDeadLetterError) and one without a message id (ErrReplayNoID),
// then forgets the key (audited as a forget with a's actor and reason), so
// that the next delivery of the message is processed. It returns the dead
// letter it replayed.
func ReplayDeadLetter(ctx context.Context, a Admin, id int64, e AuditEntry) (DeadLetterRecord, error) {
	if err := ValidateAudit(e); err != nil {
		return DeadLetterRecord{}, err
	}
	rec, ok, err := a.GetDeadLetter(ctx, id)
	switch {
	case err != nil:
		return rec, err
	case !ok:
		return rec, fmt.Errorf("%w: %d", ErrNoDeadLetter, id)
	}
	return rec, ReplayListed(ctx, a, rec, e)
}

// ReplayListed is ReplayDeadLetter for a dead letter just read (by
// ListDeadLetters, say), which it does not read again: a bulk replay
// reads each dead letter once.
func ReplayListed(ctx context.Context, a Admin, rec DeadLetterRecord, e AuditEntry) error {
	if err := ValidateAudit(e); err != nil {
		return err
	}
	if rec.MessageID == "" {
		return ErrReplayNoID
	}
	in, err := a.Inspect(ctx, rec.Key)
	if err != nil {
		return err
	}
	if in.Inbox != nil {
		return &StaleDeadLetterError{ID: rec.ID, Key: rec.Key, ProcessedAt: in.Inbox.ProcessedAt}
	}
	_, err = a.Forget(ctx, rec.Key, e)
	return err
}

// DropDeadLetterAudited marks dead letter id handled (DropDeadLetter) and
// reports whether it was already dropped; ErrNoDeadLetter when no dead
// letter has that id.
func DropDeadLetterAudited(ctx context.Context, a Admin, id int64, e AuditEntry) (alreadyDropped bool, err error) {
	if err := ValidateAudit(e); err != nil {
		return false, err
	}
	_, ok, err := a.GetDeadLetter(ctx, id)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, fmt.Errorf("%w: %d", ErrNoDeadLetter, id)
	}
	dropped, err := a.DropDeadLetter(ctx, id, e)
	return !dropped && err == nil, err
}

// ValidateAudit checks that an operator action says who and why: both are
// kept in the audit table.
func ValidateAudit(e AuditEntry) error {
	switch {
	case e.Actor == "":
		return errors.New("store: the audit entry has no actor (who)")
	case e.Reason == "":
		return errors.New("store: the audit entry has no reason (why)")
	}
	return nil
}
