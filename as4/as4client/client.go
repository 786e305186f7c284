package as4client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/edi/ebms"
)

// The default roles of ebMS 3.0 (core §5.2.2.3), used when Outgoing.From.Role
// or Outgoing.To.Role is empty.
const (
	RoleInitiator = "http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/initiator"
	RoleResponder = "http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/responder"
)

// DefaultSendTimeout is the default time Client.Send waits for the
// partner's answer.
const DefaultSendTimeout = time.Minute

// DefaultMaxResponseBytes is the default limit on the partner's answer:
// 1 MiB. A receipt is a few KiB, even with non-repudiation information.
const DefaultMaxResponseBytes = 1 << 20

// Outgoing is an ebMS 3.0 user message to send with Client.Send.
//
// A resend must be the same Outgoing: same MessageID, same Timestamp, same
// header values and payloads. The receiving MSH then recognises it as a
// resend (txinbox's endpoint answers with the receipt it stored); another
// Timestamp or payload under the same MessageID is another message that
// reuses the id (txinbox answers EBMS:0003).
type Outgoing struct {
	// MessageID is eb:MessageId: an RFC 2822 msg-id without the angle
	// brackets, e.g. DeriveMessageID's result. Required; printable ASCII
	// without white space, '<' and '>'; at most as4.MaxMessageIDLength bytes.
	MessageID string
	// RefToMessageID is eb:RefToMessageId, the message this one answers.
	// Optional.
	RefToMessageID string
	// Timestamp is eb:Timestamp, written in UTC with milliseconds.
	// Required, and the same on every resend: take it from the stored
	// message (the outbox row's creation time), not from the clock.
	Timestamp time.Time
	// From and To are eb:PartyInfo: at least one PartyId each. The roles
	// default to RoleInitiator and RoleResponder.
	From, To ebms.Party
	// AgreementRef is eb:AgreementRef. Optional.
	AgreementRef as4.AgreementRef
	// Service is eb:Service with its optional type. Required.
	Service ebms.Service
	// Action is eb:Action. Required.
	Action string
	// ConversationID is eb:ConversationId. Defaults to MessageID.
	ConversationID string
	// MPC is the eb:UserMessage/@mpc attribute. Optional.
	MPC string
	// Properties are eb:MessageProperties. Optional.
	Properties []as4.Property
	// Payloads are sent as MIME attachments, each referenced by an
	// eb:PartInfo with href="cid:...". May be empty.
	Payloads []Payload
}

// Payload is one attachment of an Outgoing message.
type Payload struct {
	// ContentID is the MIME part's Content-ID without angle brackets.
	// Defaults to "payload-N@txinbox" (N from 1): it is in the eb:PartInfo
	// href, so it must be the same on every resend.
	ContentID string
	// ContentType is the MIME part's Content-Type. Defaults to
	// application/octet-stream.
	ContentType string
	// Data is the payload, sent as it is (Content-Transfer-Encoding
	// binary).
	Data []byte
	// Properties are eb:PartProperties. A MimeType property (the media
	// type of ContentType) is written first unless one is given.
	Properties []as4.Property
}

// SendResult is the partner's receipt for a sent message.
type SendResult struct {
	// MessageID is the eb:MessageId of the message that was sent.
	MessageID string
	// ReceiptMessageID is the eb:MessageId of the receipt signal.
	ReceiptMessageID string
	// Receipt is the SOAP envelope of the answer that holds the receipt,
	// as received: the proof of delivery to store.
	Receipt []byte
	// ContentType is Receipt's Content-Type.
	ContentType string
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Warnings are the eb:Error elements of severity warning that came
	// with the receipt.
	Warnings []ReportedError
	// Duplicate is set when the partner sent no receipt but said that it
	// already has this MessageId (phase4's answer to a resend: see
	// docs/as4.md). The MessageId is derived from the sender's own stable
	// id, so the partner holds an earlier transmission of this message:
	// it is delivered. Receipt is then that answer (signed by the partner
	// and verified when Security.ReceiptVerifier is set) and
	// ReceiptMessageID its signal's MessageId.
	Duplicate bool
}

// Config configures a Client.
type Config struct {
	// URL is the partner's AS4 endpoint, http or https. Required.
	URL string
	// HTTPClient sends the requests. Defaults to a client of its own with
	// http.DefaultTransport's settings. Put TLS client certificates here.
	HTTPClient *http.Client
	// Timeout bounds one Send, from the request to the end of the answer.
	// Defaults to DefaultSendTimeout (1 minute).
	Timeout time.Duration
	// MaxResponseBytes bounds the answer that is read; a longer answer is
	// a retryable *SendError. Defaults to DefaultMaxResponseBytes (1 MiB).
	MaxResponseBytes int64
	// Security signs and encrypts the messages and verifies the
	// partner's signed receipt. Defaults to none.
	Security Security
}

func (c Config) withDefaults() Config {
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultSendTimeout
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	return c
}

func (c Config) validate() error {
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		return configError("URL", "required")
	case err != nil:
		return configError("URL", err.Error())
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return configError("URL", fmt.Sprintf("%q is not an http or https URL", c.URL))
	case c.Timeout < 0:
		return configError("Timeout", "must not be negative")
	case c.MaxResponseBytes < 0:
		return configError("MaxResponseBytes", "must not be negative")
	}
	return c.Security.validate()
}

// configError is the package's configuration error: a
// *txinbox.ConfigError (errors.As finds it) under the prefix "as4: ".
func configError(field, msg string) error {
	return fmt.Errorf("as4: %w", &txinbox.ConfigError{Field: field, Msg: msg})
}

// Client sends AS4 user messages to one partner endpoint and waits for the
// synchronous receipt (AS4 reception awareness). With
// Config.Security it signs and encrypts the messages (WS-Security,
// as the eDelivery AS4 profile asks) and verifies the partner's signed
// non-repudiation receipt. A Client is safe for concurrent use.
type Client struct {
	cfg Config
}

// New returns a Client for cfg; the error wraps a *txinbox.ConfigError
// naming the field.
func New(cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Client{cfg: cfg}, nil
}

// URL returns the partner endpoint the client posts to.
func (c *Client) URL() string { return c.cfg.URL }

// Send posts m and returns the partner's receipt. The message is
// delivered only when Send returns a nil error: the answer held an
// eb:Receipt whose RefToMessageId is m.MessageID (warnings may come with
// it).
//
// The error is an *OutgoingError when m is invalid (nothing was sent), or
// a *SendError: with Permanent set when the partner refused the message
// with an ebMS error of severity failure (resending the same message
// cannot succeed), retryable otherwise (transport failure, timeout, an
// answer without receipt or ebMS error, a 503 or 429 answer, a receipt
// for another message). Resending is safe: the partner recognises the
// MessageId.
func (c *Client) Send(ctx context.Context, m Outgoing) (*SendResult, error) {
	m = m.withDefaults()
	if err := m.validate(); err != nil {
		return nil, err
	}
	body, contentType, signed, err := c.encode(&m)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, &SendError{MessageID: m.MessageID, Reason: "building the request failed", Err: err}
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("MIME-Version", "1.0")
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, &SendError{MessageID: m.MessageID, Reason: "POST " + c.cfg.URL + " failed", Err: err}
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponseBytes+1))
	switch {
	case err != nil:
		return nil, &SendError{MessageID: m.MessageID, StatusCode: resp.StatusCode, Reason: "reading the answer failed", Err: err}
	case int64(len(answer)) > c.cfg.MaxResponseBytes:
		return nil, &SendError{MessageID: m.MessageID, StatusCode: resp.StatusCode,
			Reason: fmt.Sprintf("the answer is larger than %d bytes (MaxResponseBytes); not read", c.cfg.MaxResponseBytes)}
	}
	res, err := interpret(m.MessageID, resp.StatusCode, resp.Header, answer)
	if err != nil {
		return nil, err
	}
	return c.checkReceipt(res, signed)
}

// DeriveMessageID returns a MessageId for a message whose stable id (an
// outbox row's "scope/message_id/part") is stableID: the first 32 hex
// digits of its SHA-256, "@", and domain ("txinbox" if empty). The same
// stableID always gives the same MessageId, so a resend after a crash is
// recognised by the partner's MSH as the same message.
func DeriveMessageID(stableID, domain string) string {
	if domain == "" {
		domain = "txinbox"
	}
	sum := sha256.Sum256([]byte(stableID))
	return hex.EncodeToString(sum[:])[:32] + "@" + domain
}

// CheckMessageIDDomain reports whether domain can follow the "@" of a
// MessageId made by DeriveMessageID: a dot-separated name of letters,
// digits and '-', as in an RFC 2822 dot-atom without symbols.
func CheckMessageIDDomain(domain string) error {
	if domain == "" || len(domain) > 200 {
		return fmt.Errorf("MessageId domain %q must be 1 to 200 characters", domain)
	}
	label := 0
	for i := 0; i < len(domain); i++ {
		c := domain[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-':
			label++
		case c == '.' && label > 0:
			label = 0
		default:
			return fmt.Errorf("MessageId domain %q: character %q at byte %d is not a letter, digit, '-' or a '.' between labels", domain, c, i)
		}
	}
	if label == 0 {
		return fmt.Errorf("MessageId domain %q ends with '.'", domain)
	}
	return nil
}

// OutgoingError reports an Outgoing that cannot be sent; nothing was sent.
type OutgoingError struct {
	// Field names the invalid field, e.g. "Payloads[1].ContentType".
	Field string
	Msg   string
}

// Error returns "as4: invalid Outgoing.Field: message".
func (e *OutgoingError) Error() string { return "as4: invalid Outgoing." + e.Field + ": " + e.Msg }

// ReportedError is one eb:Error of a partner's answer.
type ReportedError struct {
	Code                as4.ErrorCode // @errorCode, e.g. "EBMS:0004"
	Severity            string        // @severity: "failure" or "warning"
	Category            string        // @category
	Origin              string        // @origin
	ShortDescription    string        // @shortDescription
	RefToMessageInError string        // @refToMessageInError
	Description         string        // eb:Description
	Detail              string        // eb:ErrorDetail
}

// IsWarning reports whether the error's severity is warning; any other
// severity (failure, or none given) refuses the message.
func (r *ReportedError) IsWarning() bool { return strings.EqualFold(r.Severity, "warning") }

// String returns e.g. "EBMS:0004 Other (failure): detail".
func (r *ReportedError) String() string {
	s := string(r.Code)
	if r.ShortDescription != "" {
		s += " " + r.ShortDescription
	}
	if r.Severity != "" {
		s += " (" + r.Severity + ")"
	}
	switch {
	case r.Detail != "":
		s += ": " + r.Detail
	case r.Description != "":
		s += ": " + r.Description
	}
	return s
}

// SendError reports a message that the partner did not confirm with a
// receipt.
type SendError struct {
	// MessageID is the eb:MessageId of the message that was sent.
	MessageID string
	// StatusCode is the HTTP status of the answer; 0 when there was none.
	StatusCode int
	// ReportedError is the ebMS error that refused the message: the first
	// eb:Error of severity failure, else the first eb:Error; zero when the
	// answer held none.
	ReportedError
	// Errors are all eb:Error elements of the answer, in order.
	Errors []ReportedError
	// Permanent is set when the partner refused the message with an ebMS
	// error of severity failure (and not with 503 or 429, its way of
	// asking for a retry): resending it cannot succeed. Otherwise the
	// message may not have arrived, and resending it is safe.
	Permanent bool
	// RetryAfter is the partner's Retry-After, if it sent one.
	RetryAfter time.Duration
	// Reason says what went wrong when there is no ebMS error.
	Reason string
	// Err is the underlying error (transport, timeout, parse), if any.
	Err error
}

// Error returns e.g. "as4: message X refused by the partner: EBMS:0003
// ValueInconsistent (failure): detail (HTTP 400, permanent)".
func (e *SendError) Error() string {
	s := "as4: message " + e.MessageID
	switch {
	case e.Code != "" && e.Permanent:
		s += " refused by the partner: " + e.ReportedError.String()
	case e.Code != "":
		s += " not accepted: " + e.ReportedError.String()
	default:
		s += " not confirmed: " + e.Reason
	}
	if e.Code != "" && e.Reason != "" {
		s += "; " + e.Reason
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.StatusCode != 0 {
		s += fmt.Sprintf(" (HTTP %d", e.StatusCode)
	} else {
		s += " (no answer"
	}
	if e.Permanent {
		return s + ", permanent)"
	}
	return s + ", retryable)"
}

// Unwrap returns Err.
func (e *SendError) Unwrap() error { return e.Err }

// IsPermanent reports whether err, as returned by Client.Send, says that
// sending the same message again cannot succeed: an *OutgoingError, or a
// *SendError with Permanent set. This is the one place that decides it.
func IsPermanent(err error) bool {
	var oe *OutgoingError
	var se *SendError
	switch {
	case errors.As(err, &oe):
		return true
	case errors.As(err, &se):
		return se.Permanent
	}
	return false
}
