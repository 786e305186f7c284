package as4client

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/internal/wire"
	"github.com/txinbox/txinbox/edi/ebms"
)

// The answer to a sent user message is read here rather than with
// ebms.Parse: its SignalError has no severity, description or detail of
// an eb:Error, and it refuses an eb:Messaging with two signal message units
// (a receipt and a separate warning), which ebMS 3.0 allows.

// answer is what a partner's answer holds.
type answer struct {
	envelope    []byte // the SOAP envelope (the root part of a multipart answer)
	contentType string // the envelope's Content-Type
	soap        string // the SOAP namespace
	signals     []signalXMLOut
	fault       string // "Code: reason" of a SOAP Fault in the Body
}

type (
	signalXMLOut struct {
		MessageInfo struct {
			MessageID      string `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ MessageId"`
			RefToMessageID string `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ RefToMessageId"`
		} `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ MessageInfo"`
		Receipt []struct{}   `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ Receipt"`
		Errors  []errorXMLIn `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ Error"`
	}
	errorXMLIn struct {
		Code                string `xml:"errorCode,attr"`
		Severity            string `xml:"severity,attr"`
		Category            string `xml:"category,attr"`
		Origin              string `xml:"origin,attr"`
		ShortDescription    string `xml:"shortDescription,attr"`
		RefToMessageInError string `xml:"refToMessageInError,attr"`
		Description         string `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ Description"`
		Detail              string `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ ErrorDetail"`
	}
	soapFaultXML struct {
		Code12   string `xml:"Code>Value"`
		Reason12 string `xml:"Reason>Text"`
		Code11   string `xml:"faultcode"`
		Reason11 string `xml:"faultstring"`
	}
)

func (e *errorXMLIn) reported() ReportedError {
	return ReportedError{
		Code: as4.ErrorCode(wire.Trim(e.Code)), Severity: wire.Trim(e.Severity), Category: wire.Trim(e.Category), Origin: wire.Trim(e.Origin),
		ShortDescription: wire.Trim(e.ShortDescription), RefToMessageInError: wire.Trim(e.RefToMessageInError),
		Description: wire.Trim(e.Description), Detail: wire.Trim(e.Detail),
	}
}

// interpret decides what an answer to the message id means: a receipt, an
// ebMS refusal, or no confirmation.
func interpret(id string, status int, h http.Header, body []byte) (*SendResult, error) {
	se := &SendError{MessageID: id, StatusCode: status, RetryAfter: retryAfter(h.Get("Retry-After"))}
	ans, err := parseAnswer(body, h.Get("Content-Type"))
	if err != nil {
		se.Reason, se.Err = describeStatus(status)+" whose body is not a SOAP envelope", err
		return nil, se
	}
	var receipt, duplicate *signalXMLOut
	var otherRef string
	for i := range ans.signals {
		s := &ans.signals[i]
		ref := wire.Trim(s.MessageInfo.RefToMessageID)
		for _, x := range s.Errors {
			r := x.reported()
			if r.RefToMessageInError == "" {
				r.RefToMessageInError = ref
			}
			if r.RefToMessageInError != "" && r.RefToMessageInError != id {
				otherRef = r.RefToMessageInError
				continue
			}
			se.Errors = append(se.Errors, r)
			if duplicate == nil && r.duplicateNotice() {
				duplicate = s
			}
		}
		if len(s.Receipt) > 0 {
			if ref == id && receipt == nil {
				receipt = s
			} else if ref != id {
				otherRef = ref
			}
		}
	}
	return decide(se, ans, receipt, duplicate, otherRef)
}

func decide(se *SendError, ans *answer, receipt, duplicate *signalXMLOut, otherRef string) (*SendResult, error) {
	var warnings []ReportedError
	for _, r := range se.Errors {
		if !r.IsWarning() {
			if duplicate != nil && r.duplicateNotice() && se.StatusCode < 500 && se.StatusCode != http.StatusTooManyRequests {
				return &SendResult{
					MessageID: se.MessageID, ReceiptMessageID: wire.Trim(duplicate.MessageInfo.MessageID), Receipt: ans.envelope,
					ContentType: ans.contentType, StatusCode: se.StatusCode, Duplicate: true, Warnings: warnings,
				}, nil
			}
			se.ReportedError = r
			// 503 and 429 ask for a retry whatever the ebMS error says:
			// txinbox's endpoint answers 503 EBMS:0004 when its database
			// failed and the message was not stored.
			se.Permanent = se.StatusCode != http.StatusServiceUnavailable && se.StatusCode != http.StatusTooManyRequests
			return nil, se
		}
		warnings = append(warnings, r)
	}
	ok := se.StatusCode >= 200 && se.StatusCode < 300
	switch {
	case receipt != nil && ok:
		return &SendResult{
			MessageID: se.MessageID, ReceiptMessageID: wire.Trim(receipt.MessageInfo.MessageID), Receipt: ans.envelope,
			ContentType: ans.contentType, StatusCode: se.StatusCode, Warnings: warnings,
		}, nil
	case receipt != nil:
		se.Reason = describeStatus(se.StatusCode) + " with a receipt: not taken as delivered"
	case otherRef != "":
		se.Reason = fmt.Sprintf("the answer refers to message %q, not to this one", otherRef)
	case len(warnings) > 0:
		se.ReportedError = warnings[0]
		se.Reason = "warnings without a receipt"
	case ans.fault != "":
		se.Reason = describeStatus(se.StatusCode) + " with a SOAP Fault and no ebMS signal: " + ans.fault
	case len(ans.envelope) == 0:
		se.Reason = describeStatus(se.StatusCode) + " with an empty body, no receipt"
	default:
		se.Reason = describeStatus(se.StatusCode) + " without a receipt or an ebMS error"
	}
	return nil, se
}

// duplicateNotice reports whether a failure is the partner's "I have this
// MessageId already": phase4 answers a message it received before so (its
// duplicate check runs before anything else), where Domibus and txinbox
// replay the receipt. From phase4 4.5.0 on it is EBMS:4001
// DuplicateDetected; before, EBMS:0004 Other with this detail, which is
// all that tells it from another failure.
func (r ReportedError) duplicateNotice() bool {
	switch r.Code {
	case "EBMS:4001":
		return r.ShortDescription == "DuplicateDetected"
	case as4.Other:
		return strings.HasSuffix(r.Detail, "was already handled (this is a duplicate)")
	}
	return false
}

func describeStatus(status int) string {
	return fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 32); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}

var errNotEnvelope = errors.New("the root element is not a SOAP 1.1 or 1.2 Envelope")

// parseAnswer reads the SOAP envelope of an answer (bare, or the root part
// of a multipart/related body). An empty body is an answer without
// envelope.
func parseAnswer(body []byte, contentType string) (*answer, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return &answer{}, nil
	}
	doc, ct := body, contentType
	mt, _, err := mime.ParseMediaType(contentType)
	switch {
	case contentType == "" && bytes.HasPrefix(bytes.TrimSpace(body), []byte("<")):
		ct = wire.ContentTypeSOAP12
	case err != nil:
		return nil, fmt.Errorf("the Content-Type %q: %w", contentType, err)
	case strings.HasPrefix(mt, "multipart/"):
		root, _, err := wire.SplitMIME(body, contentType)
		if err != nil {
			return nil, err
		}
		doc, ct = root, ""
	case !isXMLMediaType(mt):
		return nil, fmt.Errorf("the Content-Type %q is neither a SOAP envelope type nor multipart", mt)
	}
	ans, err := decodeAnswer(doc)
	if err != nil {
		return nil, err
	}
	if ct == "" {
		ct = soapContentType(ans)
	}
	ans.envelope, ans.contentType = bytes.Clone(doc), ct
	return ans, nil
}

func isXMLMediaType(mt string) bool {
	switch mt {
	case "application/soap+xml", "text/xml", "application/xml":
		return true
	}
	return false
}

// soapContentType is the Content-Type of an envelope taken out of a
// multipart answer, from its SOAP version.
func soapContentType(ans *answer) string {
	if ans.soap == ebms.NamespaceSOAP11 {
		return wire.ContentTypeSOAP11
	}
	return wire.ContentTypeSOAP12
}

// decodeAnswer reads the signal message units of eb:Messaging and the SOAP
// Fault of the Body.
func decodeAnswer(doc []byte) (*answer, error) {
	d := xml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(doc, []byte("\xef\xbb\xbf"))))
	d.CharsetReader = func(label string, r io.Reader) (io.Reader, error) {
		switch strings.ToLower(label) {
		case "utf-8", "utf8", "us-ascii", "ascii":
			return r, nil
		}
		return nil, fmt.Errorf("character encoding %q is not supported", label)
	}
	root, err := wire.NextChild(d)
	if err != nil {
		return nil, err
	}
	if root == nil || root.Name.Local != "Envelope" || (root.Name.Space != ebms.NamespaceSOAP12 && root.Name.Space != ebms.NamespaceSOAP11) {
		return nil, errNotEnvelope
	}
	ans := &answer{soap: root.Name.Space}
	for {
		el, err := wire.NextChild(d)
		if err != nil {
			return nil, err
		}
		if el == nil {
			return ans, nil
		}
		switch {
		case el.Name.Space == ans.soap && el.Name.Local == "Header":
			err = ans.readHeader(d)
		case el.Name.Space == ans.soap && el.Name.Local == "Body":
			err = ans.readBody(d)
		default:
			err = d.Skip()
		}
		if err != nil {
			return nil, err
		}
	}
}

// readHeader reads the SOAP Header's eb:Messaging blocks.
func (a *answer) readHeader(d *xml.Decoder) error {
	return eachChild(d, func(el *xml.StartElement) error {
		if el.Name.Space != ebms.NamespaceEbMS || el.Name.Local != "Messaging" {
			return d.Skip()
		}
		return eachChild(d, func(el *xml.StartElement) error {
			if el.Name.Space != ebms.NamespaceEbMS || el.Name.Local != "SignalMessage" {
				return d.Skip()
			}
			var s signalXMLOut
			if err := d.DecodeElement(&s, el); err != nil {
				return err
			}
			a.signals = append(a.signals, s)
			return nil
		})
	})
}

// readBody reads a SOAP Fault in the Body.
func (a *answer) readBody(d *xml.Decoder) error {
	return eachChild(d, func(el *xml.StartElement) error {
		if el.Name.Space != a.soap || el.Name.Local != "Fault" || a.fault != "" {
			return d.Skip()
		}
		var f soapFaultXML
		if err := d.DecodeElement(&f, el); err != nil {
			return err
		}
		code, reason := wire.Trim(f.Code12), wire.Trim(f.Reason12)
		if code == "" {
			code, reason = wire.Trim(f.Code11), wire.Trim(f.Reason11)
		}
		a.fault = code + ": " + reason
		return nil
	})
}

// eachChild calls fn for each child element of the current element; fn
// must consume the element.
func eachChild(d *xml.Decoder, fn func(el *xml.StartElement) error) error {
	for {
		el, err := wire.NextChild(d)
		if err != nil || el == nil {
			return err
		}
		if err := fn(el); err != nil {
			return err
		}
	}
}
