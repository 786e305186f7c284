package store

import (
	"context"
	"time"
)

// Purger is the optional interface of a driver that removes expired rows,
// found by type assertion.
type Purger interface {
	// PurgeBatch deletes at most req.Limit inbox rows received before
	// req.Before (and as many attempt and drift rows older than it), in a
	// short transaction of its own, skipping rows that other transactions
	// hold locks on. With DryRun it counts what would go, deleting nothing.
	PurgeBatch(ctx context.Context, req PurgeRequest) (PurgeResult, error)
	// PurgeLock takes the lock that lets one purger at a time run across
	// all processes sharing the database. ok is false when another process
	// holds it; release frees it.
	PurgeLock(ctx context.Context) (release func(), ok bool, err error)
}

// PurgeRequest selects the expired rows of one purge batch.
type PurgeRequest struct {
	Scope  string    // empty: every scope
	Before time.Time // rows received (or failed, or detected) before this expire
	Limit  int       // at most this many rows per table; ignored by DryRun
	DryRun bool
}

// PurgeResult counts the rows a purge batch removed (or would remove).
type PurgeResult struct {
	Inbox    int64
	Attempts int64
	Drift    int64
}

// Total is the sum of the counts.
func (r PurgeResult) Total() int64 { return r.Inbox + r.Attempts + r.Drift }
