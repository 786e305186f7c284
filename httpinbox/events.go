package httpinbox

import (
	"context"
	"fmt"
)

// EventKind is what became of one request through the middleware.
type EventKind int

const (
	// Processed: the handler ran and its answer committed with its effects.
	Processed EventKind = iota + 1
	// Replayed: a retry got the stored answer (Idempotent-Replayed: true).
	Replayed
	// Conflict: the key was in flight (409).
	Conflict
	// Mismatch: the key was used with another fingerprint (422; a drift
	// row is recorded).
	Mismatch
	// MissingKey: a required key was missing (400).
	MissingKey
	// InvalidKey: the key was malformed or too long (400).
	InvalidKey
	// DeadLettered: the key was given up after Config.MaxAttempts failures
	// (422), or this attempt was the last.
	DeadLettered
	// Failed: the handler failed or answered a status not kept; nothing
	// stored.
	Failed
	// Unavailable: the database failed; the outcome is unknown (503).
	Unavailable
	// BodyRefused: the body was too large or could not be read (413, 400).
	BodyRefused
	// Unidentified: Route.Identity refused the caller (401).
	Unidentified
)

var eventNames = [...]string{"", "processed", "replayed", "conflict", "mismatch", "missing_key",
	"invalid_key", "dead_lettered", "failed", "unavailable", "body_refused", "unidentified"}

// String returns the kind's lower-case name, as used in metrics.
func (k EventKind) String() string {
	if k < Processed || k > Unidentified {
		return fmt.Sprintf("event(%d)", int(k))
	}
	return eventNames[k]
}

// Event is one request's outcome at the middleware.
type Event struct {
	// Route is Route.Name.
	Route string
	Kind  EventKind
	// Status is the status sent to the client.
	Status int
}

// Observer receives the middleware's events: metrics (metrics/prom's
// HTTPMetrics), traces. OnHTTPEvent runs on the request's goroutine; it
// must not block.
type Observer interface {
	OnHTTPEvent(ctx context.Context, ev Event)
}
