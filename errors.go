package txinbox

import (
	"errors"
	"fmt"
)

// ErrNoMessageID is the reason a message without an id is dead-lettered.
var ErrNoMessageID = errors.New("txinbox: message has no id")

// ErrClosed is returned by Submit after Close.
var ErrClosed = errors.New("txinbox: processor closed")

// ErrCommitUnknown is in the error of Process (and of the other Process
// methods) when a batch's commit was sent but its answer had not come
// CommitWait after the caller's context ended: the connection was dropped,
// and the batch may or may not have committed. Its messages are not
// acked; their redelivery tells (a Duplicate if it committed). A commit
// that answers in time is always awaited, so a cancelled context alone
// never leaves the outcome unknown; a connection lost during the commit
// (the server or the network failing) still can.
var ErrCommitUnknown = errors.New("txinbox: commit abandoned CommitWait after the context ended: it may or may not have committed")

// PermanentError marks a handler error that no retry can fix: the message
// is dead-lettered at once instead of after Config.MaxAttempts.
type PermanentError struct{ Err error }

// Permanent wraps err so that the processor dead-letters the message at its
// first failure.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// Error says the failure is permanent, then what it was.
func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *PermanentError) Unwrap() error { return e.Err }

// PanicError is a handler panic turned into an error; the message is
// retried like any other failure.
type PanicError struct {
	Value any
	Stack []byte
}

// Error says the handler panicked, with the value it panicked with.
func (e *PanicError) Error() string { return fmt.Sprintf("txinbox: handler panicked: %v", e.Value) }

// ConfigError names the Config field that is invalid.
type ConfigError struct {
	Field string
	Msg   string
}

// Error names the Config field and what is wrong with it.
func (e *ConfigError) Error() string { return "txinbox: invalid Config." + e.Field + ": " + e.Msg }
