package wssec

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Signer signs outgoing envelopes the way the eDelivery AS4 profile asks:
// a wsse:Security header with the signer's certificate as an X509v3
// BinarySecurityToken and one RSA-SHA256 signature, exclusive C14N, over
// the SOAP Body, the eb:Messaging header and every attachment (SwA
// Attachment-Content-Signature-Transform). It is safe for concurrent use.
type Signer struct {
	key  crypto.Signer
	cert *x509.Certificate
}

// NewSigner returns a Signer for an RSA key and its certificate.
func NewSigner(key crypto.Signer, cert *x509.Certificate) (*Signer, error) {
	pub, ok := key.Public().(*rsa.PublicKey)
	switch {
	case cert == nil:
		return nil, errors.New("wssec: NewSigner: no certificate")
	case !ok:
		return nil, fmt.Errorf("wssec: NewSigner: the key is %T; an RSA key is required", key.Public())
	case !pub.Equal(cert.PublicKey):
		return nil, errors.New("wssec: NewSigner: the key does not belong to the certificate")
	}
	return &Signer{key: key, cert: cert}, nil
}

// Certificate returns the signer's certificate.
func (s *Signer) Certificate() *x509.Certificate { return s.cert }

const signaturePlaceholder = "SIGNATURE-VALUE-PLACEHOLDER"

// Sign returns the envelope with a wsse:Security header whose signature
// covers the Body, the eb:Messaging header and the attachments. Elements
// without a wsu:Id get one. An envelope that already has a security
// header for the ultimate receiver is refused.
func (s *Signer) Sign(envelope []byte, attachments []Attachment) ([]byte, error) {
	doc, err := parse(envelope)
	if err != nil {
		return nil, fmt.Errorf("wssec: signing: %w", err)
	}
	env, e := readSOAP(doc)
	switch {
	case e != nil:
		return nil, e
	case env.header == nil || env.messaging == nil:
		return nil, errors.New("wssec: signing: the envelope has no eb:Messaging header")
	case env.security != nil:
		return nil, errors.New("wssec: signing: the envelope already has a wsse:Security header")
	}
	// The ids derive from the envelope: signing the same message again
	// (a resend) gives the same bytes, so the partner's original receipt,
	// replayed, repeats the same references.
	seed := sha256.Sum256(envelope)
	idBase := hex.EncodeToString(seed[:16])
	out, ids, err := withIDs(envelope, env, idBase)
	if err != nil {
		return nil, err
	}
	if doc, err = parse(out); err != nil {
		return nil, fmt.Errorf("wssec: signing: %w", err)
	}
	var refs strings.Builder
	for _, id := range ids {
		writeReference(&refs, "#"+id, algExcC14N, sha256Base64(canonicalize(doc.ids[id], nil)))
	}
	for i := range attachments {
		data, e := attachmentOctets(&attachments[i], algAttachmentContent, "cid:"+attachments[i].ContentID)
		if e != nil {
			return nil, e
		}
		writeReference(&refs, "cid:"+attachments[i].ContentID, algAttachmentContent, sha256Base64(data))
	}
	if env, e = readSOAP(doc); e != nil {
		return nil, e
	}
	if out[env.header.startTag[1]-2] == '/' {
		return nil, errors.New("wssec: signing: the SOAP Header is an empty element tag")
	}
	sec := s.securityHeader(doc.root.space, refs.String(), idBase)
	out = insertAfter(out, env.header.startTag[1], sec)
	return s.fillSignature(out)
}

// fillSignature computes the signature over the SignedInfo as it is in
// the finished envelope and puts it in place of the placeholder.
func (s *Signer) fillSignature(out []byte) ([]byte, error) {
	doc, err := parse(out)
	if err != nil {
		return nil, fmt.Errorf("wssec: signing: %w", err)
	}
	env, e := readSOAP(doc)
	if e != nil {
		return nil, e
	}
	si, _ := env.security.signatures[0].child(nsDS, "SignedInfo")
	h := crypto.SHA256.New()
	h.Write(canonicalize(si, nil))
	sig, err := s.key.Sign(rand.Reader, h.Sum(nil), crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("wssec: signing: %w", err)
	}
	return bytes.Replace(out, []byte(signaturePlaceholder), []byte(base64.StdEncoding.EncodeToString(sig)), 1), nil
}

func (s *Signer) securityHeader(soapNS, refs, idBase string) string {
	mu := "true"
	if soapNS == nsSOAP11 {
		mu = "1"
	}
	bstID := "X509-" + idBase
	return `<wsse:Security xmlns:wsse="` + nsWSSE + `" xmlns:wsu="` + nsWSU + `" xmlns:wssoap="` + soapNS + `" wssoap:mustUnderstand="` + mu + `">` +
		`<wsse:BinarySecurityToken EncodingType="` + encBase64 + `" ValueType="` + tokenX509v3 + `" wsu:Id="` + bstID + `">` +
		base64.StdEncoding.EncodeToString(s.cert.Raw) + `</wsse:BinarySecurityToken>` +
		`<ds:Signature xmlns:ds="` + nsDS + `" Id="SIG-` + idBase + `">` +
		`<ds:SignedInfo><ds:CanonicalizationMethod Algorithm="` + algExcC14N + `"></ds:CanonicalizationMethod>` +
		`<ds:SignatureMethod Algorithm="` + algRSASHA256 + `"></ds:SignatureMethod>` + refs + `</ds:SignedInfo>` +
		`<ds:SignatureValue>` + signaturePlaceholder + `</ds:SignatureValue>` +
		`<ds:KeyInfo><wsse:SecurityTokenReference><wsse:Reference URI="#` + bstID + `" ValueType="` + tokenX509v3 + `"></wsse:Reference>` +
		`</wsse:SecurityTokenReference></ds:KeyInfo></ds:Signature></wsse:Security>`
}

func writeReference(b *strings.Builder, uri, transform, digest string) {
	var esc strings.Builder
	escapeAttr(&esc, uri)
	b.WriteString(`<ds:Reference URI="` + esc.String() + `"><ds:Transforms><ds:Transform Algorithm="` + transform + `"></ds:Transform></ds:Transforms>` +
		`<ds:DigestMethod Algorithm="` + algSHA256 + `"></ds:DigestMethod><ds:DigestValue>` + digest + `</ds:DigestValue></ds:Reference>`)
}

func sha256Base64(data []byte) string {
	h := crypto.SHA256.New()
	h.Write(data)
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// withIDs gives the eb:Messaging header and the Body a wsu:Id where they
// have none and returns the envelope and the two ids.
func withIDs(envelope []byte, env *soapEnvelope, idBase string) ([]byte, []string, error) {
	out := envelope
	var ids []string
	// The Body comes after the header: insert there first, so that the
	// header's offsets stay valid.
	for i, el := range []*node{env.body, env.messaging} {
		id := el.id()
		if id == "" {
			if uri, declared := declaredHere(el, "wsu"); declared && uri != nsWSU {
				return nil, nil, fmt.Errorf("wssec: signing: <%s> binds the prefix wsu to %q", el.local, uri)
			}
			id = "id-" + idBase + []string{"-body", "-messaging"}[i]
			end := el.startTag[1] - 1 // the '>'
			if out[end-1] == '/' {
				end--
			}
			out = insertAfter(out, end, ` xmlns:wsu="`+nsWSU+`" wsu:Id="`+id+`"`)
		}
		ids = append([]string{id}, ids...)
	}
	return out, ids, nil
}

func declaredHere(n *node, prefix string) (string, bool) {
	for _, d := range n.nsDecls {
		if d.prefix == prefix {
			return d.uri, true
		}
	}
	return "", false
}

func insertAfter(b []byte, at int64, s string) []byte {
	out := make([]byte, 0, len(b)+len(s))
	out = append(out, b[:at]...)
	out = append(out, s...)
	return append(out, b[at:]...)
}

func randomID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
