package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/store"
)

// AuditAction is the action recorded in the audit table for a replayed
// outbox row (ReplayAudited), beside the inbox's forget and
// drop-dead-letter.
const AuditAction = "replay-outbox"

// AuditedReplayer is a Store that replays a failed row and records who
// did it and why in the inbox's audit table, in one transaction. PG and
// Lite are.
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

// auditDetail is the detail column of an outbox replay.
func auditDetail(id int64, part int) string {
	b, _ := json.Marshal(map[string]int64{"outbox_id": id, "part": int64(part)}) //nolint:errcheck // ints
	return string(b)
}

// ReplayAudited implements AuditedReplayer.
func (p *PG) ReplayAudited(ctx context.Context, id int64, a store.AuditEntry) (bool, error) {
	if err := store.ValidateAudit(a); err != nil {
		return false, err
	}
	ok := false
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		var scope, messageID string
		var part int
		err := tx.QueryRow(ctx, p.q.replayAudited, id).Scan(&scope, &messageID, &part)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		ok = true
		_, err = tx.Exec(ctx, p.q.audit, a.Actor, AuditAction, scope, messageID, a.Reason, auditDetail(id, part))
		return err
	})
	return ok, err
}

// ReplayAudited implements AuditedReplayer.
func (l *Lite) ReplayAudited(ctx context.Context, id int64, a store.AuditEntry) (bool, error) {
	if err := store.ValidateAudit(a); err != nil {
		return false, err
	}
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: a no-op
	var scope, messageID string
	var part int
	err = tx.QueryRowContext(ctx, l.q.replayAudited, id).Scan(&scope, &messageID, &part)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	at := time.Now().UTC().Format("2006-01-02T15:04:05.000000000Z") // sqlitestore's time format
	if _, err := tx.ExecContext(ctx, l.q.audit, at, a.Actor, AuditAction, scope, messageID, a.Reason, auditDetail(id, part)); err != nil {
		return false, err
	}
	return true, tx.Commit()
}
