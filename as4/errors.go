package as4

import (
	"errors"
	"net/http"
)

// ErrorCode is an ebMS 3.0 error code, e.g. "EBMS:0009".
type ErrorCode string

// The ebMS error codes the endpoint answers with (ebMS 3.0 core §6.7;
// EBMS:0303 is the AS4 profile's).
const (
	// ValueNotRecognized: a value the endpoint cannot use, e.g. an
	// envelope in another character encoding than UTF-8.
	ValueNotRecognized ErrorCode = "EBMS:0001"
	// ValueInconsistent: values that contradict each other: two PartInfo
	// elements for one payload, a MIME part no PartInfo references, or a
	// MessageId already received with other content (drift).
	ValueInconsistent ErrorCode = "EBMS:0003"
	// Other: the endpoint failed (database, handler), or the request is
	// larger than the configured limit.
	Other ErrorCode = "EBMS:0004"
	// EmptyMessagePartitionChannel: the answer to a PullRequest; this
	// endpoint has no messages to be pulled.
	EmptyMessagePartitionChannel ErrorCode = "EBMS:0006"
	// MimeInconsistency: the MIME package is broken.
	MimeInconsistency ErrorCode = "EBMS:0007"
	// InvalidHeader: not a SOAP envelope, no or an invalid eb:Messaging
	// header, malformed XML.
	InvalidHeader ErrorCode = "EBMS:0009"
	// ExternalPayloadError: a PartInfo whose payload is not in the
	// message (unknown cid:, an external URL, an empty SOAP Body).
	ExternalPayloadError ErrorCode = "EBMS:0011"
	// PolicyNoncompliance: a wsse:Security header that must be understood
	// but is not verified by this endpoint.
	PolicyNoncompliance ErrorCode = "EBMS:0103"
	// DecompressionFailure: a payload whose CompressionType is not
	// application/gzip, or that is not gzip data.
	DecompressionFailure ErrorCode = "EBMS:0303"
)

// errorInfo is the ebMS short description and category of each code.
var errorInfo = map[ErrorCode][2]string{
	ValueNotRecognized:           {"ValueNotRecognized", "Content"},
	ValueInconsistent:            {"ValueInconsistent", "Content"},
	Other:                        {"Other", "Content"},
	EmptyMessagePartitionChannel: {"EmptyMessagePartitionChannel", "Communication"},
	MimeInconsistency:            {"MimeInconsistency", "Unpackaging"},
	InvalidHeader:                {"InvalidHeader", "Unpackaging"},
	ExternalPayloadError:         {"ExternalPayloadError", "Content"},
	PolicyNoncompliance:          {"PolicyNoncompliance", "Processing"},
	DecompressionFailure:         {"DecompressionFailure", "Communication"},
}

// ShortDescription returns the ebMS short description of the code, e.g.
// "InvalidHeader".
func (c ErrorCode) ShortDescription() string { return errorInfo[c][0] }

// Category returns the ebMS category of the code, e.g. "Unpackaging".
func (c ErrorCode) Category() string { return errorInfo[c][1] }

// faultKind says which SOAP fault accompanies an ebMS error, and so which
// HTTP status the SOAP HTTP binding gives the response.
type faultKind int

const (
	faultNone           faultKind = iota // a warning: no fault, 200
	faultSender                          // the message is at fault: 400
	faultReceiver                        // the endpoint failed: 500
	faultMustUnderstand                  // a header block not understood: 500
)

// failure is why the endpoint refused a message: the ebMS error it
// answers with and the HTTP status.
type failure struct {
	Code ErrorCode
	// Status is the HTTP status of the answer.
	Status int
	// Detail says what is wrong, for eb:ErrorDetail and the log.
	Detail string
	// RefToMessageID is the MessageId of the message in error, when known.
	RefToMessageID string
	// Warning makes the error a warning (severity="warning", no SOAP fault).
	Warning bool

	fault         faultKind
	notUnderstood []notUnderstood // header blocks for a MustUnderstand fault
	retryAfter    int             // seconds, for a Retry-After header
	err           error
}

// Error returns the code and the detail.
func (f *failure) Error() string {
	return string(f.Code) + " " + f.Code.ShortDescription() + ": " + f.Detail
}

// Unwrap returns the underlying error, if any.
func (f *failure) Unwrap() error { return f.err }

// notUnderstood names a header block for a SOAP 1.2 NotUnderstood header.
type notUnderstood struct{ space, local string }

func senderFailure(code ErrorCode, detail string) *failure {
	return &failure{Code: code, Status: http.StatusBadRequest, Detail: detail, fault: faultSender}
}

func receiverFailure(status int, detail string, err error) *failure {
	return &failure{Code: Other, Status: status, Detail: detail, fault: faultReceiver, err: err}
}

// ErrNotFound is returned by Store.Receipt when no message is stored under
// the key.
var ErrNotFound = errors.New("as4: message not found")
