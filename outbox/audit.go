package outbox

import (
	"context"
	"fmt"

	"github.com/txinbox/txinbox/store"
)

// AuditAction is the action recorded in the audit table for a replayed
// outbox row (ReplayAudited), beside the inbox's forget and
// drop-dead-letter.
const AuditAction = "replay-outbox"

// AuditedReplayer is a Store that replays a failed row and records who
// did it and why in the inbox's audit table, in one transaction.
// outboxpg.Store and outboxlite.Store are.
type AuditedReplayer interface {
	ReplayAudited(ctx context.Context, id int64, a store.AuditEntry) (bool, error)
}

// ReplayAudited puts the failed row id back (Store.Replay) and records
// the replay in the audit table (AuditAction, the row's scope and message
// id, detail {"outbox_id", "part"}). It reports false when no failed row
// has that id (nothing is recorded then). An entry without actor or
// reason, or a Store that keeps no audit, is an error.
func ReplayAudited(ctx context.Context, s Store, id int64, a store.AuditEntry) (bool, error) {
	if err := store.ValidateAudit(a); err != nil {
		return false, err
	}
	ar, ok := s.(AuditedReplayer)
	if !ok {
		return false, fmt.Errorf("outbox: a %T keeps no audit of replays", s)
	}
	return ar.ReplayAudited(ctx, id, a)
}
