package ebms

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels for errors.Is. The comments give the ebMS error an AS4 endpoint
// would answer with.
var (
	// ErrNotSOAP: the input is not a SOAP envelope (EBMS:0009 InvalidHeader).
	ErrNotSOAP = errors.New("not a SOAP envelope")
	// ErrNoMessaging: the SOAP Header has no eb:Messaging block (EBMS:0009).
	ErrNoMessaging = errors.New("no eb:Messaging header")
	// ErrInvalidHeader: eb:Messaging lacks a required element such as
	// eb:MessageId or eb:From/eb:PartyId, or bundles several message units
	// (EBMS:0009 InvalidHeader).
	ErrInvalidHeader = errors.New("invalid eb:Messaging header")
	// ErrMalformed: the XML is not well-formed or is truncated.
	ErrMalformed = errors.New("malformed XML")
	// ErrMIME: the MIME packaging is broken (EBMS:0007 MimeInconsistency).
	ErrMIME = errors.New("malformed MIME package")
	// ErrSignalMessage: the message is a signal (Receipt, Error,
	// PullRequest), never an inbox item; see *SignalError.
	ErrSignalMessage = errors.New("signal message")
	// ErrSOAPFault: the envelope carries a SOAP Fault and no eb:Messaging;
	// see *FaultError.
	ErrSOAPFault = errors.New("SOAP fault")
)

// Error reports an input that yields no user message, with where.
type Error struct {
	// Path locates the problem: an XML path with canonical prefixes (S11,
	// S12, eb), e.g. "/S12:Envelope/S12:Header/eb:Messaging", prefixed by
	// the MIME part when the envelope is in one; or a MIME location.
	Path string
	// Offset is the byte offset in the input (for a base64 or
	// quoted-printable root part, in the decoded part).
	Offset int64
	// Msg says what is wrong.
	Msg string
	// Err is the sentinel (ErrNoMessaging, ...) or the underlying error.
	Err error
}

// Error returns a message such as
// "ebms: /S11:Envelope/S11:Header/eb:Messaging/eb:UserMessage/eb:MessageInfo/eb:MessageId at byte 1021: missing".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("ebms: ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(" at ")
	} else {
		b.WriteString("at ")
	}
	fmt.Fprintf(&b, "byte %d: %s", e.Offset, e.Msg)
	return b.String()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// SignalError reports a signal message: it has a MessageId of its own but is
// never an inbox item, and its ids must not be taken for a user message's.
type SignalError struct {
	// Signal is "Receipt", "Error" or "PullRequest"; "" for a signal with
	// none of these.
	Signal         string
	MessageID      string   // eb:SignalMessage/eb:MessageInfo/eb:MessageId
	RefToMessageID string   // eb:RefToMessageId: the user message it answers
	ErrorCodes     []string // eb:Error/@errorCode, for Error signals
	Path           string
	Offset         int64
}

// Error describes the signal.
func (e *SignalError) Error() string {
	kind := e.Signal
	if kind == "" {
		kind = "unknown"
	}
	s := fmt.Sprintf("ebms: %s at byte %d: %s signal message %q", e.Path, e.Offset, kind, e.MessageID)
	if e.RefToMessageID != "" {
		s += fmt.Sprintf(" referring to %q", e.RefToMessageID)
	}
	if len(e.ErrorCodes) > 0 {
		s += " (" + strings.Join(e.ErrorCodes, ", ") + ")"
	}
	return s + ": signals are not inbox items"
}

// Is reports whether target is ErrSignalMessage.
func (e *SignalError) Is(target error) bool { return target == ErrSignalMessage }

// FaultError reports a SOAP Fault in an envelope without eb:Messaging.
type FaultError struct {
	Code   string // SOAP 1.2 Code/Value or SOAP 1.1 faultcode
	Reason string // SOAP 1.2 Reason/Text or SOAP 1.1 faultstring
	Path   string
	Offset int64
}

// Error describes the fault.
func (e *FaultError) Error() string {
	return fmt.Sprintf("ebms: %s at byte %d: SOAP fault %s: %q (no eb:Messaging)", e.Path, e.Offset, e.Code, e.Reason)
}

// Is reports whether target is ErrSOAPFault.
func (e *FaultError) Is(target error) bool { return target == ErrSOAPFault }
