package as4

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/txinbox/txinbox/as4/internal/wire"
	"github.com/txinbox/txinbox/edi/ebms"
)

// request is a received user message, read and checked.
type request struct {
	msg   *ebms.Message
	env   *envelope
	user  UserMessage
	parts []Part
	// signatureRefs are the ds:Reference elements of the request's
	// signature, for a non-repudiation receipt; nil if it is unsigned.
	signatureRefs [][]byte
	// agreement is the P-Mode the request falls under; nil without
	// Config.Agreements.
	agreement *Agreement
	// security is what the WS-Security verifier found; nil before
	// verification.
	security *verified
}

// signalRequest is a signal message posted to the endpoint.
type signalRequest struct{ sig *ebms.SignalError }

// Error describes the signal.
func (s *signalRequest) Error() string { return s.sig.Error() }

// readRequest reads a request body. The error is a *failure to answer
// with, or a *signalRequest for a signal message.
//
// This is where a request's envelope and attachments are read, before
// anything of ebMS is parsed: the one place for WS-Security's decryption
// and signature verification, between splitMIME and ebms.Parse.
func readRequest(body []byte, contentType string, lim limits, sec securityPolicy) (*request, error) {
	if contentType == "" {
		contentType = "application/soap+xml"
	}
	root, parts, f := splitMIME(body, contentType)
	if f != nil {
		return nil, f
	}
	if f := prescan(root, lim); f != nil {
		return nil, withRef(f, peekMessageID(root))
	}
	msg, err := ebms.Parse(bytes.NewReader(body), contentType)
	if err != nil {
		return nil, classifyParseError(err, root, sec)
	}
	env, f := readEnvelope(root)
	if f != nil {
		return nil, withRef(f, msg.MessageID)
	}
	if f := checkMustUnderstand(env, sec); f != nil {
		return nil, withRef(f, msg.MessageID)
	}
	if env.user == nil {
		return nil, withRef(senderFailure(InvalidHeader, "no eb:UserMessage in eb:Messaging"), msg.MessageID)
	}
	if missing := env.user.missingElements(); missing != "" {
		return nil, withRef(senderFailure(InvalidHeader, "eb:UserMessage does not follow the ebMS 3.0 header schema: "+missing), msg.MessageID)
	}
	r := &request{msg: msg, env: env, user: env.user.userMessage(), signatureRefs: env.signatureRefs}
	if f := r.checkHeader(); f != nil {
		return nil, withRef(f, msg.MessageID)
	}
	if r.parts, f = resolveParts(&r.user, env, parts, lim); f != nil {
		return nil, withRef(f, msg.MessageID)
	}
	return r, nil
}

func withRef(f *failure, ref string) *failure {
	f.RefToMessageID = ref
	return f
}

// classifyParseError turns an ebms.Parse error into the answer. A signal
// whose header blocks must be understood but are not (an unverified
// wsse:Security) is refused as a user message would be. An error carries
// the user message's MessageId when it can be read.
func classifyParseError(err error, root []byte, sec securityPolicy) error {
	var sig *ebms.SignalError
	var fault *ebms.FaultError
	switch {
	case errors.As(err, &sig):
		if env, f := readEnvelope(root); f == nil {
			if f := checkMustUnderstand(env, sec); f != nil {
				return withRef(f, sig.MessageID)
			}
		}
		return &signalRequest{sig: sig}
	case errors.As(err, &fault):
		return senderFailure(InvalidHeader, "a SOAP Fault without eb:Messaging is not an ebMS message: "+fault.Error())
	case errors.Is(err, ebms.ErrMIME):
		return withRef(senderFailure(MimeInconsistency, err.Error()), peekMessageID(root))
	}
	return withRef(senderFailure(InvalidHeader, err.Error()), peekMessageID(root))
}

// peekMessageID returns the eb:UserMessage's MessageId from an envelope
// that did not parse, for refToMessageInError, or "". Element names are
// compared by local name only, on raw tokens, up to the SOAP Body.
func peekMessageID(root []byte) string {
	d := xml.NewDecoder(bytes.NewReader(root))
	d.Strict = false
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	want := []string{"Envelope", "Header", "Messaging", "UserMessage", "MessageInfo", "MessageId"}
	depth, matched := 0, 0 // matched: how many of want the open elements are
	var text strings.Builder
	for {
		t, err := d.RawToken()
		if err != nil {
			return ""
		}
		switch t := t.(type) {
		case xml.StartElement:
			if matched == depth && matched < len(want) && t.Name.Local == want[matched] {
				matched++
			} else if depth == 1 && t.Name.Local == "Body" {
				return ""
			}
			depth++
		case xml.CharData:
			if matched == len(want) && depth == matched && text.Len() <= MaxMessageIDLength {
				text.Write(t)
			}
		case xml.EndElement:
			if matched == len(want) && depth == matched {
				id := wire.Trim(text.String())
				if len(id) > MaxMessageIDLength || !utf8.ValidString(id) || strings.ContainsRune(id, 0) {
					return ""
				}
				return id
			}
			if matched == depth {
				matched--
			}
			depth--
		}
	}
}

// splitMIME returns the SOAP envelope and the other MIME parts of a body;
// a MIME structure it cannot read is an EBMS:0007 failure.
func splitMIME(body []byte, contentType string) ([]byte, []*wire.Part, *failure) {
	root, parts, err := wire.SplitMIME(body, contentType)
	if err != nil {
		return nil, nil, senderFailure(MimeInconsistency, err.Error())
	}
	return root, parts, nil
}
