package wssec

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"mime"
	"net/url"
	"strings"
	"time"
)

// Error codes of the AS4 profile's security errors (ebMS 3.0 §6.7.2).
const (
	// FailedAuthentication is EBMS:0101: a signature, digest or
	// certificate that does not verify.
	FailedAuthentication = "EBMS:0101"
	// FailedDecryption is EBMS:0102: an encrypted part that cannot be
	// decrypted.
	FailedDecryption = "EBMS:0102"
	// PolicyNoncompliance is EBMS:0103: security that does not meet the
	// policy (a part left unsigned, an algorithm not accepted).
	PolicyNoncompliance = "EBMS:0103"
	// InvalidHeader is EBMS:0009: an envelope too malformed to look for
	// its security header.
	InvalidHeader = "EBMS:0009"
)

// Error is why a message's security was refused. Code is the ebMS error
// code to answer with; Detail says what was wrong and where.
type Error struct {
	Code   string
	Detail string
}

// Error returns "wssec: CODE: detail".
func (e *Error) Error() string { return "wssec: " + e.Code + ": " + e.Detail }

func authFailed(format string, args ...any) *Error {
	return &Error{Code: FailedAuthentication, Detail: fmt.Sprintf(format, args...)}
}

func policyFailed(format string, args ...any) *Error {
	return &Error{Code: PolicyNoncompliance, Detail: fmt.Sprintf(format, args...)}
}

// Attachment is one MIME part of a SOAP-with-attachments message, after
// its Content-Transfer-Encoding was decoded.
type Attachment struct {
	// ContentID is the part's Content-ID without the angle brackets.
	ContentID string
	// ContentType is the part's Content-Type header.
	ContentType string
	// Data is the part's content.
	Data []byte
}

// Reference is one ds:Reference of a verified signature.
type Reference struct {
	// URI is the reference's URI: "#id" or "cid:content-id".
	URI string
	// XML is the exclusive canonical form of the ds:Reference element,
	// as a non-repudiation receipt repeats it.
	XML []byte
	// DigestMethod and DigestValue are the reference's digest.
	DigestMethod string
	DigestValue  []byte
}

// Result is what Verify found.
type Result struct {
	// Signed is false for a message without a signature addressed to
	// this node; the other fields are then empty.
	Signed bool
	// Certificate is the signer's certificate, Chain the verified chain
	// from it to a trust anchor.
	Certificate *x509.Certificate
	Chain       []*x509.Certificate
	// References are the signature's references, in SignedInfo order.
	References []Reference
	// Encrypted reports that the message was decrypted; Envelope and
	// Attachments are then the plaintext, otherwise what Verify got.
	Encrypted   bool
	Envelope    []byte
	Attachments []Attachment
}

// VerifyConfig configures a Verifier.
type VerifyConfig struct {
	// Roots are the trust anchors: a signing certificate must chain to
	// one of them (a partner's self-signed certificate may be its own
	// anchor). Required.
	Roots *x509.CertPool
	// Intermediates are further certificates that may complete a chain,
	// besides those a PKIPath token carries. Defaults to none.
	Intermediates *x509.CertPool
	// Certificates are the partners' certificates, for signatures whose
	// key is referenced by IssuerSerial, SubjectKeyIdentifier or
	// thumbprint instead of a BinarySecurityToken. Defaults to none.
	Certificates []*x509.Certificate
	// AllowSHA1 accepts rsa-sha1 signatures and SHA-1 digests (legacy
	// partners). Defaults to false: EBMS:0103.
	AllowSHA1 bool
	// Now is the time certificates must be valid at. Defaults to
	// time.Now.
	Now func() time.Time
	// Decrypter decrypts messages encrypted for this node before their
	// signature is verified. Defaults to nil: encrypted messages are
	// refused with EBMS:0102.
	Decrypter *Decrypter
}

// Verifier verifies the WS-Security signature of incoming messages. It
// is safe for concurrent use.
type Verifier struct{ cfg VerifyConfig }

// NewVerifier returns a Verifier, or an error naming the invalid field.
func NewVerifier(cfg VerifyConfig) (*Verifier, error) {
	if cfg.Roots == nil {
		return nil, fmt.Errorf("wssec: invalid VerifyConfig.Roots: required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Verifier{cfg: cfg}, nil
}

// Verify decrypts (with VerifyConfig.Decrypter) and then checks the
// signature in the wsse:Security header of a SOAP envelope addressed to
// this node: sign-then-encrypt, as the AS4 profile orders it. A message
// without a signature gives a Result whose Signed is false. A signed message passes only if the signature
// verifies with a trusted certificate valid now, every reference's digest
// matches, and the signature covers the SOAP Body, the eb:Messaging header
// and every attachment, each exactly once. The error is an *Error.
func (v *Verifier) Verify(envelope []byte, attachments []Attachment) (*Result, error) {
	doc, err := parse(envelope)
	if err != nil {
		return nil, &Error{Code: InvalidHeader, Detail: "reading the SOAP envelope: " + err.Error()}
	}
	env, e := readSOAP(doc)
	if e != nil {
		return nil, e
	}
	res := &Result{Envelope: envelope, Attachments: attachments}
	if env.security != nil && env.security.encrypted {
		if v.cfg.Decrypter == nil {
			return nil, decryptFailed("the message is encrypted, and no decryption key is configured")
		}
		if res.Envelope, res.Attachments, err = v.cfg.Decrypter.Decrypt(envelope, attachments); err != nil {
			return nil, err
		}
		res.Encrypted = true
		if doc, err = parse(res.Envelope); err != nil {
			return nil, decryptFailed("the decrypted envelope: %v", err)
		}
		if env, e = readSOAP(doc); e != nil {
			return nil, e
		}
	}
	if env.security == nil || len(env.security.signatures) == 0 {
		return res, nil
	}
	return v.verifySignature(doc, env, res)
}

func (v *Verifier) verifySignature(doc *document, env *soapEnvelope, res *Result) (*Result, error) {
	if len(doc.dupIDs) > 0 {
		return nil, authFailed("the Id %q occurs on more than one element", doc.dupIDs[0])
	}
	if len(env.security.signatures) > 1 {
		return nil, policyFailed("wsse:Security holds %d ds:Signature elements; one is expected", len(env.security.signatures))
	}
	sig, e := readSignature(env.security.signatures[0])
	if e != nil {
		return nil, e
	}
	if e := v.checkAlgorithms(sig); e != nil {
		return nil, e
	}
	cert, chain, e := v.signer(sig, env.security)
	if e != nil {
		return nil, e
	}
	if e := checkSignatureValue(sig, cert); e != nil {
		return nil, e
	}
	res.Signed, res.Certificate, res.Chain = true, cert, chain
	covered, e := v.checkReferences(sig, doc, res.Attachments, res)
	if e != nil {
		return nil, e
	}
	if e := checkCoverage(env, res.Attachments, covered); e != nil {
		return nil, e
	}
	return res, nil
}

// soapEnvelope is the structure of a SOAP envelope that matters here.
type soapEnvelope struct {
	header, body, messaging *node
	security                *securityHeader
}

type securityHeader struct {
	el         *node
	signatures []*node
	encrypted  bool
}

// readSOAP finds the Header, the Body, the eb:Messaging and the security
// header addressed to this node, refusing envelopes where they are not
// unique: a second Body or eb:Messaging is how a signature is wrapped
// around other content than the one used.
func readSOAP(doc *document) (*soapEnvelope, *Error) {
	root := doc.root
	if root.local != "Envelope" || (root.space != nsSOAP11 && root.space != nsSOAP12) {
		return nil, &Error{Code: InvalidHeader, Detail: fmt.Sprintf("the root element is {%s}%s, not a SOAP Envelope", root.space, root.local)}
	}
	env := &soapEnvelope{}
	var err error
	if env.header, err = root.child(root.space, "Header"); err != nil {
		return nil, &Error{Code: InvalidHeader, Detail: err.Error()}
	}
	if env.body, err = root.child(root.space, "Body"); err != nil || env.body == nil {
		return nil, &Error{Code: InvalidHeader, Detail: "the envelope must have exactly one SOAP Body"}
	}
	if env.header == nil {
		return env, nil
	}
	if env.messaging, err = env.header.child(nsEbMS, "Messaging"); err != nil {
		return nil, &Error{Code: InvalidHeader, Detail: err.Error()}
	}
	for _, h := range env.header.elements() {
		if !h.is(nsWSSE, "Security") || !ultimateReceiver[roleOf(h, root.space)] {
			continue
		}
		if env.security != nil {
			return nil, policyFailed("more than one wsse:Security header is addressed to this node")
		}
		env.security = &securityHeader{el: h}
		for _, c := range h.elements() {
			switch {
			case c.is(nsDS, "Signature"):
				env.security.signatures = append(env.security.signatures, c)
			case c.space == nsXENC && (c.local == "EncryptedKey" || c.local == "EncryptedData" || c.local == "ReferenceList"):
				env.security.encrypted = true
			}
		}
	}
	return env, nil
}

// roleOf returns a header block's SOAP 1.2 role or SOAP 1.1 actor.
func roleOf(h *node, soapNS string) string {
	if soapNS == nsSOAP12 {
		return h.attr(soapNS, "role")
	}
	return h.attr(soapNS, "actor")
}

// signature is a ds:Signature, read and checked for its shape.
type signature struct {
	el, signedInfo *node
	c14nPrefixes   []string
	method         string
	value          []byte
	keyInfo        *node
	refs           []*node
}

func readSignature(el *node) (*signature, *Error) {
	s := &signature{el: el}
	var err error
	if s.signedInfo, err = el.child(nsDS, "SignedInfo"); err != nil || s.signedInfo == nil {
		return nil, authFailed("ds:Signature must have exactly one ds:SignedInfo")
	}
	cm, err := s.signedInfo.child(nsDS, "CanonicalizationMethod")
	if err != nil || cm == nil {
		return nil, authFailed("ds:SignedInfo must have one ds:CanonicalizationMethod")
	}
	if alg := cm.attr("", "Algorithm"); alg != algExcC14N {
		return nil, policyFailed("SignedInfo canonicalization %q is not supported (exclusive C14N is)", alg)
	}
	s.c14nPrefixes = inclusivePrefixes(cm)
	sm, err := s.signedInfo.child(nsDS, "SignatureMethod")
	if err != nil || sm == nil {
		return nil, authFailed("ds:SignedInfo must have one ds:SignatureMethod")
	}
	s.method = sm.attr("", "Algorithm")
	for _, c := range s.signedInfo.elements() {
		if c.is(nsDS, "Reference") {
			s.refs = append(s.refs, c)
		}
	}
	if len(s.refs) == 0 {
		return nil, authFailed("ds:SignedInfo has no ds:Reference")
	}
	sv, err := el.child(nsDS, "SignatureValue")
	if err != nil || sv == nil {
		return nil, authFailed("ds:Signature must have one ds:SignatureValue")
	}
	if s.value, err = decodeBase64(sv.textContent()); err != nil {
		return nil, authFailed("ds:SignatureValue: %v", err)
	}
	if s.keyInfo, err = el.child(nsDS, "KeyInfo"); err != nil || s.keyInfo == nil {
		return nil, authFailed("ds:Signature must have one ds:KeyInfo")
	}
	return s, nil
}

// inclusivePrefixes returns the PrefixList of an ec:InclusiveNamespaces
// child of a canonicalization method or transform.
func inclusivePrefixes(n *node) []string {
	in, _ := n.child(nsEC, "InclusiveNamespaces")
	if in == nil {
		return nil
	}
	return strings.Fields(in.attr("", "PrefixList"))
}

func decodeBase64(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, s)
	return base64.StdEncoding.DecodeString(s)
}

// signatureHashes maps signature methods to their hash.
var signatureHashes = map[string]crypto.Hash{
	algRSASHA1: crypto.SHA1, algRSASHA256: crypto.SHA256, algRSASHA384: crypto.SHA384, algRSASHA512: crypto.SHA512,
}

// digestHashes maps digest methods to their hash.
var digestHashes = map[string]crypto.Hash{
	algSHA1: crypto.SHA1, algSHA256: crypto.SHA256, algSHA384: crypto.SHA384, algSHA512: crypto.SHA512,
}

func (v *Verifier) checkAlgorithms(s *signature) *Error {
	h, ok := signatureHashes[s.method]
	if !ok {
		return policyFailed("signature method %q is not supported (rsa-sha256 is)", s.method)
	}
	if h == crypto.SHA1 && !v.cfg.AllowSHA1 {
		return policyFailed("signature method rsa-sha1 is not accepted (SHA-1 is disabled)")
	}
	return nil
}

// checkSignatureValue verifies the SignatureValue over the canonical
// SignedInfo with the certificate's key.
func checkSignatureValue(s *signature, cert *x509.Certificate) *Error {
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return policyFailed("the signing certificate's key is %T; RSA keys are supported", cert.PublicKey)
	}
	h := signatureHashes[s.method]
	d := h.New()
	d.Write(canonicalize(s.signedInfo, s.c14nPrefixes))
	if err := rsa.VerifyPKCS1v15(pub, h, d.Sum(nil), s.value); err != nil {
		return authFailed("the signature value does not verify with the key of %q", cert.Subject.String())
	}
	return nil
}

// checkReferences checks the digest of every reference and returns the
// elements and attachments they cover. A target referenced twice is
// refused: a signature covers each part once.
func (v *Verifier) checkReferences(s *signature, doc *document, atts []Attachment, res *Result) (map[any]bool, *Error) {
	covered := map[any]bool{}
	for _, ref := range s.refs {
		uri := ref.attr("", "URI")
		target, data, e := referenced(ref, uri, doc, atts)
		if e != nil {
			return nil, e
		}
		if covered[target] {
			return nil, authFailed("two ds:Reference elements cover %q", uri)
		}
		covered[target] = true
		r, e := readReference(ref)
		if e != nil {
			return nil, e
		}
		if e := v.checkDigest(&r, data); e != nil {
			return nil, e
		}
		res.References = append(res.References, r)
	}
	return covered, nil
}

// referenced returns what a reference points at (an element or an
// attachment index) and the octets its transforms produce.
func referenced(ref *node, uri string, doc *document, atts []Attachment) (any, []byte, *Error) {
	transforms, e := transformsOf(ref)
	if e != nil {
		return nil, nil, e
	}
	switch {
	case strings.HasPrefix(uri, "#") && len(uri) > 1:
		el, ok := doc.ids[uri[1:]]
		if !ok {
			return nil, nil, authFailed("ds:Reference URI=%q: no element has this Id", uri)
		}
		if len(transforms) != 1 || transforms[0].attr("", "Algorithm") != algExcC14N {
			return nil, nil, policyFailed("ds:Reference URI=%q: the transforms must be exactly exclusive C14N", uri)
		}
		return el, canonicalize(el, inclusivePrefixes(transforms[0])), nil
	case strings.HasPrefix(uri, "cid:"):
		i := attachmentIndex(atts, uri[len("cid:"):])
		if i < 0 {
			return nil, nil, authFailed("ds:Reference URI=%q: no MIME part has this Content-ID", uri)
		}
		if len(transforms) != 1 {
			return nil, nil, policyFailed("ds:Reference URI=%q: one SwA transform is expected, found %d transforms", uri, len(transforms))
		}
		data, e := attachmentOctets(&atts[i], transforms[0].attr("", "Algorithm"), uri)
		return i, data, e
	}
	return nil, nil, policyFailed("ds:Reference URI=%q: only #id and cid: references are accepted", uri)
}

func transformsOf(ref *node) ([]*node, *Error) {
	ts, err := ref.child(nsDS, "Transforms")
	if err != nil {
		return nil, authFailed("%v", err)
	}
	if ts == nil {
		return nil, nil
	}
	var out []*node
	for _, t := range ts.elements() {
		if !t.is(nsDS, "Transform") {
			return nil, authFailed("unexpected <%s> in ds:Transforms", t.local)
		}
		out = append(out, t)
	}
	return out, nil
}

// attachmentIndex finds the attachment with a Content-ID, as written in
// a cid: URL (percent-encoded) or verbatim.
func attachmentIndex(atts []Attachment, cid string) int {
	un, err := url.PathUnescape(cid)
	for i := range atts {
		if atts[i].ContentID == cid || (err == nil && atts[i].ContentID == un) {
			return i
		}
	}
	return -1
}

// attachmentOctets applies the SwA Attachment-Content-Signature-Transform:
// the decoded content, canonicalized with exclusive C14N when its type is
// XML (SwA profile 1.1 §5.4.2).
func attachmentOctets(a *Attachment, alg, uri string) ([]byte, *Error) {
	switch alg {
	case algAttachmentContent:
	case algAttachmentComplete:
		return nil, policyFailed("ds:Reference URI=%q: the Attachment-Complete-Signature-Transform is not supported; AS4 uses Attachment-Content-Signature-Transform", uri)
	default:
		return nil, policyFailed("ds:Reference URI=%q: transform %q is not supported for attachments", uri, alg)
	}
	if !isXMLType(a.ContentType) {
		return a.Data, nil
	}
	var out bytes.Buffer
	if err := canonicalizeStream(a.Data, &out); err != nil {
		return nil, authFailed("attachment <%s> is declared XML (%s) but cannot be canonicalized: %v", a.ContentID, a.ContentType, err)
	}
	return out.Bytes(), nil
}

func isXMLType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "text/xml" || mt == "application/xml" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+xml"))
}

func (v *Verifier) checkDigest(r *Reference, data []byte) *Error {
	h, ok := digestHashes[r.DigestMethod]
	if !ok {
		return policyFailed("ds:Reference URI=%q: digest method %q is not supported", r.URI, r.DigestMethod)
	}
	if h == crypto.SHA1 && !v.cfg.AllowSHA1 {
		return policyFailed("ds:Reference URI=%q: SHA-1 digests are not accepted", r.URI)
	}
	d := h.New()
	d.Write(data)
	if subtle.ConstantTimeCompare(d.Sum(nil), r.DigestValue) != 1 {
		return authFailed("ds:Reference URI=%q: the digest does not match the content (changed after signing)", r.URI)
	}
	return nil
}

// checkCoverage refuses a signature that leaves the Body, the
// eb:Messaging header or an attachment unsigned.
func checkCoverage(env *soapEnvelope, atts []Attachment, covered map[any]bool) *Error {
	if !covered[env.body] {
		return policyFailed("the signature does not cover the SOAP Body")
	}
	if env.messaging != nil && !covered[env.messaging] {
		return policyFailed("the signature does not cover the eb:Messaging header")
	}
	for i := range atts {
		if !covered[i] {
			return policyFailed("the signature does not cover the MIME part <%s>", atts[i].ContentID)
		}
	}
	return nil
}
