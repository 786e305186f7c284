package as4

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"strings"
	"unicode/utf8"

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

// mimePart is one non-root part of a multipart/related request.
type mimePart struct {
	contentID   string
	contentType string
	data        []byte
	used        bool
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
func readRequest(body []byte, contentType string, lim limits, acceptUnverified bool) (*request, error) {
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
		return nil, classifyParseError(err, root, acceptUnverified)
	}
	env, f := readEnvelope(root)
	if f != nil {
		return nil, withRef(f, msg.MessageID)
	}
	if f := checkMustUnderstand(env, acceptUnverified); f != nil {
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
func classifyParseError(err error, root []byte, acceptUnverified bool) error {
	var sig *ebms.SignalError
	var fault *ebms.FaultError
	switch {
	case errors.As(err, &sig):
		if env, f := readEnvelope(root); f == nil {
			if f := checkMustUnderstand(env, acceptUnverified); f != nil {
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
				id := trim(text.String())
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

// splitMIME returns the SOAP envelope and the other MIME parts of a body.
func splitMIME(body []byte, contentType string) ([]byte, []*mimePart, *failure) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, nil, senderFailure(MimeInconsistency, "Content-Type: "+err.Error())
	}
	if !strings.HasPrefix(mt, "multipart/") {
		return body, nil, nil
	}
	start, boundary := trimCID(params["start"]), params["boundary"]
	// The reader takes an input cut inside a part's headers for its end.
	if boundary == "" || !bytes.Contains(body, []byte("--"+boundary+"--")) {
		return nil, nil, senderFailure(MimeInconsistency, "the multipart body does not end with its closing boundary (truncated?)")
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	var root []byte
	var parts []*mimePart
	for n := 1; ; n++ {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, senderFailure(MimeInconsistency, fmt.Sprintf("MIME part %d: %v", n, err))
		}
		mp, f := readPart(p, n)
		if f != nil {
			return nil, nil, f
		}
		if root == nil && (start == "" || mp.contentID == start) {
			root = mp.data
			continue
		}
		parts = append(parts, mp)
	}
	if root == nil {
		return nil, nil, senderFailure(MimeInconsistency, "no root part")
	}
	return root, parts, nil
}

func readPart(p *multipart.Part, n int) (*mimePart, *failure) {
	var r io.Reader = p
	switch cte := strings.ToLower(strings.TrimSpace(p.Header.Get("Content-Transfer-Encoding"))); cte {
	case "", "binary", "8bit", "7bit":
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, &stripSpace{r: p})
	case "quoted-printable":
		r = quotedprintable.NewReader(p)
	default:
		return nil, senderFailure(MimeInconsistency, fmt.Sprintf("MIME part %d: unsupported Content-Transfer-Encoding %q", n, cte))
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, senderFailure(MimeInconsistency, fmt.Sprintf("MIME part %d: %v", n, err))
	}
	return &mimePart{contentID: cleanText(trimCID(p.Header.Get("Content-Id"))), contentType: cleanText(p.Header.Get("Content-Type")), data: data}, nil
}

// trimCID removes white space and the angle brackets of a Content-ID.
func trimCID(s string) string {
	return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "<"), ">")
}

// stripSpace drops line breaks and spaces, for base64 bodies.
type stripSpace struct{ r io.Reader }

// Read implements io.Reader.
func (s *stripSpace) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := s.r.Read(p)
		k := 0
		for _, b := range p[:n] {
			if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
				p[k] = b
				k++
			}
		}
		if k > 0 || err != nil {
			return k, err
		}
	}
}

// cleanText makes a MIME header value storable as database text: valid
// UTF-8 without NUL bytes.
func cleanText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}
