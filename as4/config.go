package as4

import (
	"context"
	"log/slog"
	"time"

	"github.com/txinbox/txinbox"
)

// DefaultMaxBodyBytes is the default request size limit: 50 MiB.
const DefaultMaxBodyBytes = 50 << 20

// DefaultScope is the default inbox scope of AS4 messages.
const DefaultScope = "as4"

// DeliverFunc runs the business effect of a new message inside the inbox
// transaction that stores it: if it fails, nothing is stored, the partner
// gets an ebMS error and no receipt, and its retry is processed again.
type DeliverFunc[TTx any] func(ctx context.Context, tx TTx, m *Received) error

// Config configures a Handler.
type Config[TTx any] struct {
	// Store keeps messages, payloads and receipts in the inbox's
	// database, in the inbox transaction. Required.
	Store Store[TTx]
	// Inbox configures the processor that deduplicates the messages
	// (batching, attempts, hooks, logger). Inbox.Scope defaults to "as4";
	// Inbox.Handler and Inbox.BatchHandler must be nil: the endpoint's own
	// handler stores the message and then calls Deliver. Other fields
	// default as in txinbox.Config.
	Inbox txinbox.Config[TTx]
	// Deliver runs the business effect of each new message. Defaults to
	// none: messages are only stored.
	Deliver DeliverFunc[TTx]
	// MaxBodyBytes is the largest request body accepted; a larger one is
	// answered 413 with an ebMS error. Defaults to 50 MiB.
	MaxBodyBytes int64
	// AcceptUnverifiedSecurity accepts messages whose wsse:Security header
	// is marked mustUnderstand, although the endpoint verifies no
	// signature and decrypts nothing: set it only when TLS client
	// authentication or a gateway in front verifies them. Defaults to
	// false: such messages get a SOAP MustUnderstand fault with EBMS:0103.
	AcceptUnverifiedSecurity bool
	// Security verifies signed messages and signs receipts. Defaults to
	// no verification and unsigned receipts.
	Security SecurityConfig
	// NewMessageID returns the MessageId of each receipt and error signal.
	// Defaults to a random UUID followed by "@txinbox".
	NewMessageID func() string
	// Logger logs refused messages and failures. Defaults to Inbox.Logger,
	// or slog.Default().
	Logger *slog.Logger
}

func (c Config[TTx]) withDefaults() Config[TTx] {
	if c.Inbox.Scope == "" {
		c.Inbox.Scope = DefaultScope
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.NewMessageID == nil {
		c.NewMessageID = newMessageID
	}
	if c.Logger == nil {
		c.Logger = c.Inbox.Logger
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Inbox.Now == nil {
		c.Inbox.Now = time.Now
	}
	return c
}

func (c Config[TTx]) validate() error {
	switch {
	case c.Store == nil:
		return &ConfigError{Field: "Store", Msg: "required"}
	case c.Inbox.Handler != nil || c.Inbox.BatchHandler != nil:
		return &ConfigError{Field: "Inbox.Handler", Msg: "must be nil: use Deliver for the business effect"}
	case c.MaxBodyBytes < 0:
		return &ConfigError{Field: "MaxBodyBytes", Msg: "must not be negative"}
	}
	return c.Security.validate()
}

// ConfigError names the Config field that is invalid.
type ConfigError struct {
	Field string
	Msg   string
}

// Error returns "as4: invalid Config.Field: message".
func (e *ConfigError) Error() string { return "as4: invalid Config." + e.Field + ": " + e.Msg }
