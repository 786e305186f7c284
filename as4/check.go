package as4

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/txinbox/txinbox/as4/internal/wire"
	"github.com/txinbox/txinbox/edi/ebms"
)

// NamespaceWSSE is the WS-Security 1.0 namespace of wsse:Security.
const NamespaceWSSE = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"

// MaxMessageIDLength is the longest eb:MessageId accepted, in bytes (as
// Domibus; ebMS 3.0 sets no limit).
const MaxMessageIDLength = 255

// securityPolicy is what the endpoint did with a request's wsse:Security
// header before reading it, for checkMustUnderstand's answer.
type securityPolicy struct {
	// accept: the header is processed (a signature verified, a message
	// decrypted) or accepted unverified (AcceptUnverifiedSecurity).
	accept bool
	// verifier: a Security.Verifier is configured.
	verifier bool
	// unread is why the verifier could not read the envelope; "" if it
	// did.
	unread string
}

// checkMustUnderstand refuses header blocks targeted at this node that
// must be understood but are not: wsse:Security unless the policy accepts
// it, and any other block but eb:Messaging.
func checkMustUnderstand(env *envelope, sec securityPolicy) *failure {
	var not []notUnderstood
	security := false
	for _, b := range env.blocks {
		if !b.mustUnderstand || (b.name.Space == ebms.NamespaceEbMS && b.name.Local == "Messaging") {
			continue
		}
		isSecurity := b.name.Space == NamespaceWSSE && b.name.Local == "Security"
		if isSecurity && sec.accept {
			continue
		}
		security = security || isSecurity
		not = append(not, notUnderstood{space: b.name.Space, local: b.name.Local})
	}
	if len(not) == 0 {
		return nil
	}
	f := &failure{Code: InvalidHeader, Status: http.StatusInternalServerError, fault: faultMustUnderstand, notUnderstood: not,
		Detail: fmt.Sprintf("header block {%s}%s must be understood but is not processed by this endpoint", not[0].space, not[0].local)}
	if security {
		f.Code = PolicyNoncompliance
		f.Detail = sec.refusal()
	}
	return f
}

// refusal says why a wsse:Security header marked mustUnderstand was not
// understood.
func (sec securityPolicy) refusal() string {
	switch {
	case sec.unread != "":
		return "wsse:Security must be understood, but the envelope could not be read to verify it: " + sec.unread
	case sec.verifier:
		return "wsse:Security must be understood, but the one addressed to this endpoint holds neither a ds:Signature nor encrypted data, " +
			"the only parts this endpoint processes (a wsse:UsernameToken or a lone wsu:Timestamp is not)"
	}
	return "wsse:Security must be understood, but this endpoint does not verify signatures or decrypt (no trust store is configured); " +
		"it accepts such messages only when configured to (AcceptUnverifiedSecurity) because TLS or a gateway verifies them"
}

// checkHeader checks what ebms.Parse leaves open: the Timestamp's syntax
// and the MessageId's length.
func (r *request) checkHeader() *failure {
	if len(r.user.MessageID) > MaxMessageIDLength {
		return senderFailure(InvalidHeader, fmt.Sprintf("eb:MessageId is %d bytes long; at most %d are accepted", len(r.user.MessageID), MaxMessageIDLength))
	}
	if !validTimestamp(r.user.Timestamp) {
		return senderFailure(InvalidHeader, fmt.Sprintf("eb:Timestamp %q is not an xsd:dateTime", r.user.Timestamp))
	}
	return nil
}

// validTimestamp accepts an xsd:dateTime with or without a zone and with
// any number of fractional digits.
func validTimestamp(s string) bool {
	if len(s) < 19 {
		return false
	}
	head, rest := s[:19], s[19:]
	if _, err := time.Parse("2006-01-02T15:04:05", head); err != nil {
		return false
	}
	if strings.HasPrefix(rest, ".") {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 1 {
			return false
		}
		rest = rest[i:]
	}
	if rest == "" || rest == "Z" {
		return true
	}
	_, err := time.Parse("-07:00", rest)
	return err == nil
}

// resolveParts finds the payload of every PartInfo: the SOAP Body (no
// href), an element of the envelope ("#id"), or a MIME part ("cid:id").
//
// Compressed payloads are decompressed, within lim.decompressed for the
// whole message.
func resolveParts(u *UserMessage, env *envelope, mimeParts []*wire.Part, lim limits) ([]Part, *failure) {
	budget := lim.decompressed
	byCID := make(map[string]*wire.Part, len(mimeParts))
	for _, p := range mimeParts {
		if _, dup := byCID[p.ContentID]; dup && p.ContentID != "" {
			return nil, senderFailure(MimeInconsistency, fmt.Sprintf("two MIME parts have the Content-ID <%s>", p.ContentID))
		}
		byCID[p.ContentID] = p
	}
	parts := make([]Part, 0, len(u.PartInfos))
	seen := map[string]bool{}
	bodyUsed := false
	for i := range u.PartInfos {
		pi := u.PartInfos[i]
		p, target, f := resolvePart(&pi, env, byCID)
		if f != nil {
			return nil, f
		}
		if f := decompress(&p, &budget, lim.decompressed, lim.reserve); f != nil {
			return nil, f
		}
		if seen[target] {
			return nil, senderFailure(ValueInconsistent, fmt.Sprintf("two eb:PartInfo elements reference the same payload (href=%q)", pi.Href))
		}
		seen[target] = true
		bodyUsed = bodyUsed || strings.HasPrefix(target, "body")
		parts = append(parts, p)
	}
	for _, p := range mimeParts {
		// A part is used when a PartInfo resolved to "cid:" + its Content-ID,
		// which is unique (checked above) and never empty (resolvePart).
		if !seen["cid:"+p.ContentID] {
			return nil, senderFailure(ValueInconsistent, fmt.Sprintf("MIME part <%s> is not referenced by any eb:PartInfo", p.ContentID))
		}
	}
	if env.bodyElems && !bodyUsed {
		return nil, senderFailure(ValueInconsistent, "the SOAP Body has content that no eb:PartInfo references")
	}
	return parts, nil
}

// resolvePart returns the payload of one PartInfo and a name of its target,
// to find two PartInfos for one payload.
func resolvePart(pi *PartInfo, env *envelope, byCID map[string]*wire.Part) (Part, string, *failure) {
	href := pi.Href
	switch {
	case href == "":
		if len(env.body) == 0 {
			return Part{}, "", senderFailure(ExternalPayloadError, "an eb:PartInfo without href references the SOAP Body, which is empty")
		}
		return Part{Info: *pi, Data: env.body}, "body", nil
	case strings.HasPrefix(href, "#"):
		id := href[1:]
		if id != "" && id == env.bodyID && len(env.body) > 0 {
			return Part{Info: *pi, Data: env.body}, "body", nil
		}
		if el, ok := env.ids[id]; ok && id != "" {
			return Part{Info: *pi, Data: bytes.Clone(el)}, "body#" + id, nil
		}
		return Part{}, "", senderFailure(ExternalPayloadError, fmt.Sprintf("eb:PartInfo href=%q: no element with this id in the SOAP Body", href))
	}
	// A href without a scheme that names a Content-ID (Domibus writes
	// href="attachment1") is taken as a cid: reference.
	cid, hasScheme := strings.CutPrefix(href, "cid:")
	var mp *wire.Part
	if hasScheme || !strings.Contains(href, ":") {
		mp = byCID[cid]
		if un, err := url.PathUnescape(cid); mp == nil && err == nil {
			mp = byCID[un]
		}
	}
	if mp == nil || mp.ContentID == "" {
		return Part{}, "", senderFailure(ExternalPayloadError, fmt.Sprintf("eb:PartInfo href=%q: no MIME part with this Content-ID (external payloads are not fetched)", href))
	}
	return Part{Info: *pi, ContentID: mp.ContentID, ContentType: mp.ContentType, Data: mp.Data}, "cid:" + mp.ContentID, nil
}
