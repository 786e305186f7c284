package outbox

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Config configures a Relay.
type Config struct {
	// Target sends each row. Required.
	Target Target
	// BatchSize is how many rows one claim takes. Defaults to 32.
	BatchSize int
	// Concurrency is how many sends of a batch run at once. Defaults to 4.
	Concurrency int
	// Ordered sends the rows of one Key one at a time, in the order they
	// were written: a row is sent only once every earlier row of its key
	// was sent or failed for good, so a retrying row holds back the later
	// rows of its key. Rows with an empty Key are not ordered. Each claim
	// takes at most one row per key. Defaults to false: rows are sent in
	// parallel, in roughly id order.
	Ordered bool
	// MaxAttempts is how many sends a row gets; after the last one fails
	// the row fails for good with the target's error. Defaults to 10.
	MaxAttempts int
	// Backoff is the wait after the attempt-th failed send (attempt
	// counts from 1). A target error made with RetryAfter waits at least
	// its own delay. Defaults to DefaultBackoff.
	Backoff func(attempt int) time.Duration
	// PollInterval is the wait between claims when nothing was due; while
	// there is work the relay claims again at once. Defaults to 200ms.
	PollInterval time.Duration
	// SendTimeout bounds one Send. Defaults to 30s.
	SendTimeout time.Duration
	// LeaseDuration is how long a relay holds a claimed batch: on SQLite
	// the lease after which another relay may send the rows again, on
	// PostgreSQL how long the claim transaction may stay open. No send
	// starts later than LeaseDuration - SendTimeout after the claim; the
	// rows left go back to the queue. Must be longer than SendTimeout.
	// Defaults to 2m.
	LeaseDuration time.Duration
	// Logger logs failed sends and database errors. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// OnSend, when set, is called after every send attempt, from the
	// goroutine that sent: feed Prometheus counters and a latency
	// histogram from it. It must not block.
	OnSend func(SendEvent)
}

// SendResult is what a send attempt did to its row.
type SendResult int

// The results of a send attempt.
const (
	// Sent: the target confirmed; the row is marked sent.
	Sent SendResult = iota + 1
	// Retried: the send failed; the row waits for its next attempt.
	Retried
	// Failed: the send failed for good (a Permanent error or the last
	// attempt); the row is marked failed.
	Failed
)

// String names the result: "sent", "retried" or "failed".
func (r SendResult) String() string {
	switch r {
	case Sent:
		return "sent"
	case Retried:
		return "retried"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("SendResult(%d)", int(r))
}

// SendEvent describes one send attempt, for Config.OnSend.
type SendEvent struct {
	Message *Message
	Result  SendResult
	Err     error         // nil when Sent
	Latency time.Duration // of the target's Send
}

// DefaultBackoff waits about 1s after the first failure, doubling each time
// up to 5 minutes, with random jitter (between half and all of it) so that
// relays do not retry in step.
func DefaultBackoff(attempt int) time.Duration {
	d := 5 * time.Minute
	if attempt < 10 {
		d = min(d, time.Second<<max(attempt-1, 0))
	}
	return d/2 + rand.N(d/2+1)
}

func (c Config) withDefaults() Config {
	if c.BatchSize == 0 {
		c.BatchSize = 32
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 10
	}
	if c.Backoff == nil {
		c.Backoff = DefaultBackoff
	}
	if c.PollInterval == 0 {
		c.PollInterval = 200 * time.Millisecond
	}
	if c.SendTimeout == 0 {
		c.SendTimeout = 30 * time.Second
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 2 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Target == nil:
		return errors.New("outbox: Config.Target is required")
	case c.BatchSize < 0:
		return fmt.Errorf("outbox: Config.BatchSize %d must not be negative", c.BatchSize)
	case c.Concurrency < 0:
		return fmt.Errorf("outbox: Config.Concurrency %d must not be negative", c.Concurrency)
	case c.MaxAttempts < 0:
		return fmt.Errorf("outbox: Config.MaxAttempts %d must not be negative", c.MaxAttempts)
	case c.PollInterval < 0:
		return fmt.Errorf("outbox: Config.PollInterval %s must not be negative", c.PollInterval)
	case c.SendTimeout < 0:
		return fmt.Errorf("outbox: Config.SendTimeout %s must not be negative", c.SendTimeout)
	case c.LeaseDuration <= c.SendTimeout:
		return fmt.Errorf("outbox: Config.LeaseDuration %s must be longer than Config.SendTimeout %s", c.LeaseDuration, c.SendTimeout)
	}
	return nil
}
