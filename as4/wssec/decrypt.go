package wssec

import (
	"bufio"
	"bytes"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"errors"
	"fmt"
	"net/textproto"
	"sort"
	"strings"
)

// Encryption algorithm and type URIs.
const (
	algRSAOAEPMGF1P = "http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p"
	algRSAOAEP11    = "http://www.w3.org/2009/xmlenc11#rsa-oaep"
	algAES128GCM    = "http://www.w3.org/2009/xmlenc11#aes128-gcm"
	algAES192GCM    = "http://www.w3.org/2009/xmlenc11#aes192-gcm"
	algAES256GCM    = "http://www.w3.org/2009/xmlenc11#aes256-gcm"
	algMGF1SHA1     = "http://www.w3.org/2009/xmlenc11#mgf1sha1"
	algMGF1SHA256   = "http://www.w3.org/2009/xmlenc11#mgf1sha256"
	algMGF1SHA384   = "http://www.w3.org/2009/xmlenc11#mgf1sha384"
	algMGF1SHA512   = "http://www.w3.org/2009/xmlenc11#mgf1sha512"
	nsXENC11        = "http://www.w3.org/2009/xmlenc11#"

	typeElement          = "http://www.w3.org/2001/04/xmlenc#Element"
	typeContent          = "http://www.w3.org/2001/04/xmlenc#Content"
	typeAttachmentOnly   = "http://docs.oasis-open.org/wss/oasis-wss-SwAProfile-1.1#Attachment-Content-Only"
	typeAttachmentFull   = "http://docs.oasis-open.org/wss/oasis-wss-SwAProfile-1.1#Attachment-Complete"
	algAttachmentCipher  = "http://docs.oasis-open.org/wss/oasis-wss-SwAProfile-1.1#Attachment-Ciphertext-Transform"
	gcmNonceSize         = 12
	maxEncryptedDataRefs = 1000
)

var gcmKeySizes = map[string]int{algAES128GCM: 16, algAES192GCM: 24, algAES256GCM: 32}

var mgfHashes = map[string]crypto.Hash{
	algMGF1SHA1: crypto.SHA1, algMGF1SHA256: crypto.SHA256, algMGF1SHA384: crypto.SHA384, algMGF1SHA512: crypto.SHA512,
}

// Decrypter decrypts messages encrypted for this node's key (WSS 1.1
// with the SwA profile, as eDelivery AS4 uses it): an xenc:EncryptedKey
// in the security header, RSA-OAEP key transport (xmlenc#rsa-oaep-mgf1p,
// or xmlenc11#rsa-oaep with MGF1 over SHA-1 or SHA-256), and
// AES-GCM xenc:EncryptedData for attachments (Attachment-Content-Only or
// Attachment-Complete) or SOAP elements (Element, Content). It is safe
// for concurrent use.
type Decrypter struct {
	key  *rsa.PrivateKey
	cert *x509.Certificate
}

// NewDecrypter returns a Decrypter for an RSA key and its certificate,
// which is what senders name in the EncryptedKey's KeyInfo.
func NewDecrypter(key crypto.Signer, cert *x509.Certificate) (*Decrypter, error) {
	rk, ok := key.(*rsa.PrivateKey)
	switch {
	case !ok:
		return nil, fmt.Errorf("wssec: NewDecrypter: the key is %T; an RSA key is required", key)
	case cert == nil || !rk.PublicKey.Equal(cert.PublicKey):
		return nil, errors.New("wssec: NewDecrypter: the key does not belong to the certificate")
	}
	return &Decrypter{key: rk, cert: cert}, nil
}

func decryptFailed(format string, args ...any) *Error {
	return &Error{Code: FailedDecryption, Detail: fmt.Sprintf(format, args...)}
}

// Decrypt returns the envelope and attachments with every EncryptedData
// of the security header's EncryptedKey replaced by its plaintext. A
// message without an EncryptedKey is returned unchanged. Decrypted
// attachments get the Content-Type the EncryptedData names (MimeType,
// or the encrypted MIME headers). The error is an *Error.
func (d *Decrypter) Decrypt(envelope []byte, atts []Attachment) ([]byte, []Attachment, error) {
	doc, err := parse(envelope)
	if err != nil {
		return nil, nil, &Error{Code: InvalidHeader, Detail: "reading the SOAP envelope: " + err.Error()}
	}
	env, e := readSOAP(doc)
	if e != nil {
		return nil, nil, e
	}
	if env.security == nil || !env.security.encrypted {
		return envelope, atts, nil
	}
	if len(doc.dupIDs) > 0 {
		return nil, nil, decryptFailed("the Id %q occurs on more than one element", doc.dupIDs[0])
	}
	eks := env.security.el.elementsNamed(nsXENC, "EncryptedKey")
	if len(eks) != 1 {
		return nil, nil, decryptFailed("the security header holds %d xenc:EncryptedKey elements; one is expected", len(eks))
	}
	ek := eks[0]
	key, e := d.unwrapKey(ek, env.security)
	if e != nil {
		return nil, nil, e
	}
	eds, e := encryptedDataOf(ek, doc)
	if e != nil {
		return nil, nil, e
	}
	out := append([]Attachment(nil), atts...)
	var splices []splice
	for _, ed := range eds {
		s, e := decryptData(ed, key, out)
		if e != nil {
			return nil, nil, e
		}
		if s != nil {
			splices = append(splices, *s)
		}
	}
	return applySplices(envelope, splices), out, nil
}

// elementsNamed returns n's child elements {space}local.
func (n *node) elementsNamed(space, local string) []*node {
	var out []*node
	for _, c := range n.elements() {
		if c.is(space, local) {
			out = append(out, c)
		}
	}
	return out
}

// unwrapKey decrypts the EncryptedKey's symmetric key with the node's
// private key, after checking that it names this node's certificate.
func (d *Decrypter) unwrapKey(ek *node, sec *securityHeader) ([]byte, *Error) {
	em, _ := ek.child(nsXENC, "EncryptionMethod")
	if em == nil {
		return nil, decryptFailed("xenc:EncryptedKey has no EncryptionMethod")
	}
	opts, e := oaepOptions(em)
	if e != nil {
		return nil, e
	}
	if e := d.checkRecipient(ek, sec); e != nil {
		return nil, e
	}
	cd, _ := ek.child(nsXENC, "CipherData")
	var cv *node
	if cd != nil {
		cv, _ = cd.child(nsXENC, "CipherValue")
	}
	if cv == nil {
		return nil, decryptFailed("xenc:EncryptedKey has no CipherData/CipherValue")
	}
	ct, err := decodeBase64(cv.textContent())
	if err != nil {
		return nil, decryptFailed("EncryptedKey CipherValue: %v", err)
	}
	key, err := d.key.Decrypt(rand.Reader, ct, opts)
	if err != nil {
		return nil, decryptFailed("the EncryptedKey does not decrypt with this node's key")
	}
	return key, nil
}

// oaepOptions reads RSA-OAEP parameters: the digest (ds:DigestMethod,
// SHA-1 by default) and, for xmlenc11#rsa-oaep, the MGF (SHA-1 by
// default).
func oaepOptions(em *node) (*rsa.OAEPOptions, *Error) {
	alg := em.attr("", "Algorithm")
	if alg != algRSAOAEPMGF1P && alg != algRSAOAEP11 {
		return nil, &Error{Code: PolicyNoncompliance, Detail: fmt.Sprintf("key transport %q is not supported (RSA-OAEP is)", alg)}
	}
	opts := &rsa.OAEPOptions{Hash: crypto.SHA1, MGFHash: crypto.SHA1}
	if dm, _ := em.child(nsDS, "DigestMethod"); dm != nil {
		h, ok := digestHashes[dm.attr("", "Algorithm")]
		if !ok {
			return nil, decryptFailed("RSA-OAEP digest %q is not supported", dm.attr("", "Algorithm"))
		}
		opts.Hash = h
	}
	if mgf, _ := em.child(nsXENC11, "MGF"); mgf != nil {
		if alg != algRSAOAEP11 {
			return nil, decryptFailed("xenc11:MGF is only allowed with xmlenc11#rsa-oaep")
		}
		h, ok := mgfHashes[mgf.attr("", "Algorithm")]
		if !ok {
			return nil, decryptFailed("RSA-OAEP MGF %q is not supported", mgf.attr("", "Algorithm"))
		}
		opts.MGFHash = h
	}
	if p, _ := em.child(nsXENC, "OAEPparams"); p != nil {
		label, err := decodeBase64(p.textContent())
		if err != nil {
			return nil, decryptFailed("OAEPparams: %v", err)
		}
		opts.Label = label
	}
	return opts, nil
}

// checkRecipient refuses an EncryptedKey that names another certificate
// than this node's.
func (d *Decrypter) checkRecipient(ek *node, sec *securityHeader) *Error {
	ki, _ := ek.child(nsDS, "KeyInfo")
	if ki == nil {
		return nil // the key is implied
	}
	str, _ := ki.child(nsWSSE, "SecurityTokenReference")
	if str == nil || len(str.elements()) != 1 {
		return decryptFailed("the EncryptedKey's KeyInfo must hold one wsse:SecurityTokenReference with one child")
	}
	ref := str.elements()[0]
	var match bool
	switch {
	case ref.is(nsWSSE, "Reference"):
		cert, _, e := tokenByReference(ref, sec)
		if e != nil {
			return decryptFailed("%s", e.Detail)
		}
		match = cert.Equal(d.cert)
	case ref.is(nsWSSE, "KeyIdentifier"):
		id, err := decodeBase64(ref.textContent())
		if err != nil {
			return decryptFailed("wsse:KeyIdentifier: %v", err)
		}
		sum := sha1.Sum(d.cert.Raw)
		match = bytes.Equal(id, d.cert.SubjectKeyId) || bytes.Equal(id, sum[:])
	case ref.is(nsDS, "X509Data"):
		v := &Verifier{cfg: VerifyConfig{Certificates: []*x509.Certificate{d.cert}}}
		_, e := v.certByIssuerSerial(ref)
		match = e == nil
	default:
		return decryptFailed("the EncryptedKey's SecurityTokenReference with <%s> is not supported", ref.local)
	}
	if !match {
		return decryptFailed("the message is encrypted for another certificate than this node's %q", d.cert.Subject.String())
	}
	return nil
}

// encryptedDataOf returns the EncryptedData elements of the key's
// ReferenceList, each once.
func encryptedDataOf(ek *node, doc *document) ([]*node, *Error) {
	rl, _ := ek.child(nsXENC, "ReferenceList")
	if rl == nil {
		return nil, decryptFailed("the EncryptedKey has no ReferenceList")
	}
	refs := rl.elementsNamed(nsXENC, "DataReference")
	if len(refs) == 0 || len(refs) > maxEncryptedDataRefs {
		return nil, decryptFailed("the EncryptedKey's ReferenceList has %d DataReference elements", len(refs))
	}
	seen := map[*node]bool{}
	var out []*node
	for _, r := range refs {
		uri := r.attr("", "URI")
		ed := doc.ids[strings.TrimPrefix(uri, "#")]
		if !strings.HasPrefix(uri, "#") || !ed.is(nsXENC, "EncryptedData") {
			return nil, decryptFailed("DataReference URI=%q names no xenc:EncryptedData", uri)
		}
		if seen[ed] {
			return nil, decryptFailed("DataReference URI=%q occurs twice", uri)
		}
		seen[ed] = true
		out = append(out, ed)
	}
	return out, nil
}

// splice replaces the bytes [from, to) of the envelope.
type splice struct {
	from, to int64
	with     []byte
}

func applySplices(b []byte, ss []splice) []byte {
	sort.Slice(ss, func(i, j int) bool { return ss[i].from > ss[j].from })
	out := b
	for _, s := range ss {
		out = append(append(append([]byte(nil), out[:s.from]...), s.with...), out[s.to:]...)
	}
	return out
}

// decryptData decrypts one EncryptedData: an attachment in place in
// atts, or an element of the envelope, returned as a splice.
func decryptData(ed *node, key []byte, atts []Attachment) (*splice, *Error) {
	id := ed.id()
	em, _ := ed.child(nsXENC, "EncryptionMethod")
	if em == nil {
		return nil, decryptFailed("EncryptedData %q has no EncryptionMethod", id)
	}
	alg := em.attr("", "Algorithm")
	size, ok := gcmKeySizes[alg]
	switch {
	case !ok:
		return nil, &Error{Code: PolicyNoncompliance, Detail: fmt.Sprintf("EncryptedData %q: algorithm %q is not supported (AES-GCM is)", id, alg)}
	case len(key) != size:
		return nil, decryptFailed("EncryptedData %q: the key is %d bytes, %s needs %d", id, len(key), alg, size)
	}
	cd, _ := ed.child(nsXENC, "CipherData")
	if cd == nil {
		return nil, decryptFailed("EncryptedData %q has no CipherData", id)
	}
	switch typ := ed.attr("", "Type"); typ {
	case typeAttachmentOnly, typeAttachmentFull:
		return nil, decryptAttachment(ed, cd, key, atts, typ == typeAttachmentFull)
	case typeElement, typeContent:
		return decryptElement(ed, cd, key)
	default:
		return nil, decryptFailed("EncryptedData %q: Type %q is not supported", id, typ)
	}
}

func openGCM(key, data []byte, what string) ([]byte, *Error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, decryptFailed("%s: %v", what, err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, decryptFailed("%s: %v", what, err)
	}
	if len(data) < gcmNonceSize+gcm.Overhead() {
		return nil, decryptFailed("%s: %d bytes are too short for AES-GCM", what, len(data))
	}
	plain, err := gcm.Open(nil, data[:gcmNonceSize], data[gcmNonceSize:], nil)
	if err != nil {
		return nil, decryptFailed("%s: the AES-GCM authentication tag does not match (changed or wrong key)", what)
	}
	return plain, nil
}

func decryptAttachment(ed, cd *node, key []byte, atts []Attachment, complete bool) *Error {
	cr, _ := cd.child(nsXENC, "CipherReference")
	if cr == nil {
		return decryptFailed("attachment EncryptedData %q has no CipherReference", ed.id())
	}
	uri := cr.attr("", "URI")
	i := -1
	if strings.HasPrefix(uri, "cid:") {
		i = attachmentIndex(atts, uri[len("cid:"):])
	}
	if i < 0 {
		return decryptFailed("CipherReference URI=%q: no MIME part has this Content-ID", uri)
	}
	if ts, _ := cr.child(nsXENC, "Transforms"); ts != nil {
		for _, t := range ts.elements() {
			if a := t.attr("", "Algorithm"); a != algAttachmentCipher {
				return decryptFailed("CipherReference URI=%q: transform %q is not supported", uri, a)
			}
		}
	}
	plain, e := openGCM(key, atts[i].Data, "MIME part <"+atts[i].ContentID+">")
	if e != nil {
		return e
	}
	a := atts[i]
	a.Data = plain
	if mt := ed.attr("", "MimeType"); mt != "" {
		a.ContentType = mt
	}
	if complete {
		r := textproto.NewReader(bufio.NewReader(bytes.NewReader(plain)))
		h, err := r.ReadMIMEHeader()
		if err != nil {
			return decryptFailed("MIME part <%s>: the decrypted MIME headers: %v", a.ContentID, err)
		}
		if ct := h.Get("Content-Type"); ct != "" {
			a.ContentType = ct
		}
		i := bytes.Index(plain, []byte("\r\n\r\n"))
		if i < 0 {
			return decryptFailed("MIME part <%s>: no end of the decrypted MIME headers", a.ContentID)
		}
		a.Data = plain[i+4:]
	}
	atts[i] = a
	return nil
}

// decryptElement returns the plaintext in place of the EncryptedData:
// for Type Element the element, for Content the parent's content.
func decryptElement(ed, cd *node, key []byte) (*splice, *Error) {
	cv, _ := cd.child(nsXENC, "CipherValue")
	if cv == nil {
		return nil, decryptFailed("EncryptedData %q has no CipherValue", ed.id())
	}
	data, err := decodeBase64(cv.textContent())
	if err != nil {
		return nil, decryptFailed("EncryptedData %q CipherValue: %v", ed.id(), err)
	}
	plain, e := openGCM(key, data, "EncryptedData "+ed.id())
	if e != nil {
		return nil, e
	}
	return &splice{from: ed.startTag[0], to: ed.end, with: plain}, nil
}
