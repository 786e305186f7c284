package as4

import (
	"context"
	"fmt"
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
	// MaxDepth is the deepest element nesting accepted in the SOAP
	// envelope; MaxElements the most elements and attributes in it. A
	// request beyond either is answered EBMS:0009 before it is parsed.
	// Default DefaultMaxDepth and DefaultMaxElements.
	MaxDepth, MaxElements int
	// MaxConcurrentRequests is how many requests are read and answered at
	// once; the endpoint's memory is bounded by about this times
	// MaxBodyBytes times a small factor (docs/as4.md). More are answered
	// 503 with Retry-After and EBMS:0004 without reading their body.
	// Default DefaultMaxConcurrentRequests.
	MaxConcurrentRequests int
	// MaxDecompressedBytes is the largest payload accepted after gzip
	// decompression; a larger one is refused with EBMS:0303 as soon as
	// decompression passes the limit. Default DefaultMaxDecompressedBytes.
	MaxDecompressedBytes int64
	// MaxDecompressedInFlight bounds the decompressed payloads of all the
	// requests being answered at once. A payload's size is found without
	// keeping its bytes, so a gzip bomb costs no memory; a request whose
	// payloads would pass this bound is answered 503 with Retry-After
	// (EBMS:0004) and nothing is stored. Default twice
	// MaxDecompressedBytes.
	MaxDecompressedInFlight int64
	// Agreements are the P-Modes of the partner agreements (see
	// Agreement and LoadAgreements). Empty: every well-formed message is
	// accepted, its MessageId scoped by the sender.
	Agreements []Agreement
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
	if c.MaxDepth == 0 {
		c.MaxDepth = DefaultMaxDepth
	}
	if c.MaxElements == 0 {
		c.MaxElements = DefaultMaxElements
	}
	if c.MaxConcurrentRequests == 0 {
		c.MaxConcurrentRequests = DefaultMaxConcurrentRequests
	}
	if c.MaxDecompressedBytes == 0 {
		c.MaxDecompressedBytes = DefaultMaxDecompressedBytes
	}
	if c.MaxDecompressedInFlight == 0 {
		c.MaxDecompressedInFlight = 2 * c.MaxDecompressedBytes
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
		return configError("Store", "required")
	case c.Inbox.Handler != nil || c.Inbox.BatchHandler != nil:
		return configError("Inbox.Handler", "must be nil: use Deliver for the business effect")
	case c.MaxBodyBytes < 0:
		return configError("MaxBodyBytes", "must not be negative")
	case validateAgreements(c.Agreements) != nil:
		return validateAgreements(c.Agreements)
	case c.MaxDepth < 0:
		return configError("MaxDepth", "must not be negative")
	case c.MaxElements < 0:
		return configError("MaxElements", "must not be negative")
	case c.MaxConcurrentRequests < 0:
		return configError("MaxConcurrentRequests", "must not be negative")
	case c.MaxDecompressedBytes < 0:
		return configError("MaxDecompressedBytes", "must not be negative")
	case c.MaxDecompressedInFlight < 0:
		return configError("MaxDecompressedInFlight", "must not be negative")
	}
	for _, a := range c.Agreements {
		if (a.RequireSignature || a.RequireEncryption) && c.Security.Verifier == nil {
			return configError("Agreements", fmt.Sprintf("agreement %q requires signed or encrypted messages: that needs Security.Verifier (a verified signature, a decrypting key)", a.Name))
		}
	}
	return c.Security.validate()
}

// configError is the package's configuration error: a
// *txinbox.ConfigError (errors.As finds it) under the prefix "as4: ".
func configError(field, msg string) error {
	return fmt.Errorf("as4: %w", &txinbox.ConfigError{Field: field, Msg: msg})
}
