package as4

import (
	"bytes"
	"crypto/rand"
	"encoding/xml"
	"fmt"
	"strings"
	"time"

	"github.com/txinbox/txinbox/as4/internal/wire"
	"github.com/txinbox/txinbox/edi/ebms"
)

// soapVersion is the SOAP version of an answer: the request's, or 1.2 when
// the request is not readable.
type soapVersion struct {
	ns, prefix, contentType, mustUnderstand string
}

var (
	soap12 = soapVersion{ebms.NamespaceSOAP12, "S12", wire.ContentTypeSOAP12, "true"}
	soap11 = soapVersion{ebms.NamespaceSOAP11, "S11", wire.ContentTypeSOAP11, "1"}
)

func soapOf(version string) soapVersion {
	if version == "1.1" {
		return soap11
	}
	return soap12
}

// soapOfContentType returns the SOAP version of an answer's Content-Type.
func soapOfContentType(ct string) soapVersion {
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "text/xml") {
		return soap11
	}
	return soap12
}

// guessSOAP picks the answer's SOAP version for a request that could not be
// read: 1.1 only if its namespace occurs and 1.2's does not.
func guessSOAP(body []byte) soapVersion {
	s := string(body[:min(len(body), 64<<10)])
	if strings.Contains(s, ebms.NamespaceSOAP11) && !strings.Contains(s, ebms.NamespaceSOAP12) {
		return soap11
	}
	return soap12
}

// newMessageID returns a random UUID (version 4) at txinbox.
func newMessageID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x@txinbox", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// signalEnvelope writes an envelope with one eb:SignalMessage; content
// writes what follows its eb:MessageInfo, fault the Body's content.
func signalEnvelope(v soapVersion, id, ref string, at time.Time, content, fault func(w *xmlWriter), extraHeader func(w *xmlWriter)) []byte {
	var w xmlWriter
	w.b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	w.open(v.prefix+":Envelope", "xmlns:"+v.prefix, v.ns, "xmlns:eb", ns)
	w.open(v.prefix + ":Header")
	if extraHeader != nil {
		extraHeader(&w)
	}
	w.open("eb:Messaging", v.prefix+":mustUnderstand", v.mustUnderstand)
	w.open("eb:SignalMessage")
	w.open("eb:MessageInfo")
	w.text("eb:Timestamp", wire.Timestamp(at))
	w.text("eb:MessageId", id)
	w.optText("eb:RefToMessageId", ref)
	w.close("eb:MessageInfo")
	content(&w)
	w.close("eb:SignalMessage")
	w.close("eb:Messaging")
	w.close(v.prefix + ":Header")
	w.open(v.prefix + ":Body")
	if fault != nil {
		fault(&w)
	}
	w.close(v.prefix + ":Body")
	w.close(v.prefix + ":Envelope")
	return []byte(w.b.String())
}

// receiptEnvelope returns a receipt for u (AS4 profile §5.1.8): for a
// signed request, nrr is its ebbp:NonRepudiationInformation (see
// NonRepudiationInformation); for an unsigned one (nrr nil), eb:Receipt
// holds a copy of the eb:UserMessage wrapped in an element of another
// namespace, as the ebMS header schema requires.
func receiptEnvelope(v soapVersion, id string, at time.Time, u *UserMessage, nrr []byte) []byte {
	var w xmlWriter
	receiptContent(&w, u, nrr)
	return receiptWithContent(v, id, u.MessageID, at, []byte(w.b.String()))
}

// receiptWithContent returns a receipt whose eb:Receipt holds content.
func receiptWithContent(v soapVersion, id, ref string, at time.Time, content []byte) []byte {
	return signalEnvelope(v, id, ref, at, func(w *xmlWriter) {
		w.open("eb:Receipt")
		w.b.Write(content)
		w.close("eb:Receipt")
	}, nil, nil)
}

// storedReceiptParts recovers the MessageId, RefToMessageId, timestamp and
// eb:Receipt content of a receipt written by receiptWithContent, to write
// it again in another SOAP version. ok is false for anything else (a
// receipt stored by an older version is replayed as it is).
func storedReceiptParts(body []byte) (id, ref string, at time.Time, content []byte, ok bool) {
	between := func(s []byte, open, close string) ([]byte, bool) {
		_, rest, found := bytes.Cut(s, []byte(open))
		if !found {
			return nil, false
		}
		in, _, found := bytes.Cut(rest, []byte(close))
		return in, found
	}
	info, ok1 := between(body, "<eb:MessageInfo>", "</eb:MessageInfo>")
	ts, ok2 := between(info, "<eb:Timestamp>", "</eb:Timestamp>")
	mid, ok3 := between(info, "<eb:MessageId>", "</eb:MessageId>")
	rid, _ := between(info, "<eb:RefToMessageId>", "</eb:RefToMessageId>")
	content, ok4 := between(body, "<eb:Receipt>", "</eb:Receipt>")
	t, err := time.Parse("2006-01-02T15:04:05.000Z", string(ts))
	if !ok1 || !ok2 || !ok3 || !ok4 || err != nil || bytes.HasPrefix(content, []byte("<eb:")) {
		return "", "", time.Time{}, nil, false
	}
	return xmlUnescape(mid), xmlUnescape(rid), t, content, true
}

// xmlUnescape undoes xml.EscapeText for text the endpoint wrote.
func xmlUnescape(b []byte) string {
	var s string
	if err := xml.Unmarshal(append(append([]byte("<x>"), b...), "</x>"...), &s); err != nil {
		return string(b)
	}
	return s
}

// errorEnvelope returns an ebMS Error signal for f, with a SOAP Fault
// unless f is a warning.
func errorEnvelope(v soapVersion, id string, at time.Time, f *failure) []byte {
	severity := "failure"
	if f.Warning {
		severity = "warning"
	}
	content := func(w *xmlWriter) {
		w.open("eb:Error", "origin", "ebMS", "category", f.Code.Category(), "errorCode", string(f.Code),
			"severity", severity, "refToMessageInError", f.RefToMessageID, "shortDescription", f.Code.ShortDescription())
		w.text("eb:Description", f.Code.ShortDescription(), "xml:lang", "en")
		w.optText("eb:ErrorDetail", f.Detail)
		w.close("eb:Error")
	}
	var fault, extra func(w *xmlWriter)
	if f.fault != faultNone {
		fault = func(w *xmlWriter) { writeFault(w, v, f) }
	}
	if f.fault == faultMustUnderstand && v == soap12 {
		extra = func(w *xmlWriter) {
			for i, n := range f.notUnderstood {
				p := fmt.Sprintf("nu%d", i)
				w.open(v.prefix+":NotUnderstood", "qname", p+":"+n.local, "xmlns:"+p, n.space)
				w.close(v.prefix + ":NotUnderstood")
			}
		}
	}
	return signalEnvelope(v, id, f.RefToMessageID, at, content, fault, extra)
}

func writeFault(w *xmlWriter, v soapVersion, f *failure) {
	code := map[faultKind][2]string{
		faultSender:         {"Sender", "Client"},
		faultReceiver:       {"Receiver", "Server"},
		faultMustUnderstand: {"MustUnderstand", "MustUnderstand"},
	}[f.fault]
	reason := string(f.Code) + " " + f.Code.ShortDescription() + ": " + f.Detail
	w.open(v.prefix + ":Fault")
	if v == soap11 {
		w.text("faultcode", v.prefix+":"+code[1])
		w.text("faultstring", reason)
	} else {
		w.open(v.prefix + ":Code")
		w.text(v.prefix+":Value", v.prefix+":"+code[0])
		w.close(v.prefix + ":Code")
		w.open(v.prefix + ":Reason")
		w.text(v.prefix+":Text", reason, "xml:lang", "en")
		w.close(v.prefix + ":Reason")
	}
	w.close(v.prefix + ":Fault")
}
