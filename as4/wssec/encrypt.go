package wssec

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Encrypter encrypts the attachments of outgoing messages for one
// recipient as the eDelivery AS4 profile asks: AES-128-GCM per attachment
// (Attachment-Content-Only), the key transported with RSA-OAEP
// (xmlenc11#rsa-oaep, SHA-256 digest, MGF1 with SHA-256) for the
// recipient's certificate, referenced by a BinarySecurityToken. Sign
// first, then encrypt: the signature covers the plaintext.
type Encrypter struct{ cert *x509.Certificate }

// NewEncrypter returns an Encrypter for the recipient's RSA certificate.
func NewEncrypter(recipient *x509.Certificate) (*Encrypter, error) {
	if recipient == nil {
		return nil, errors.New("wssec: NewEncrypter: no certificate")
	}
	if _, ok := recipient.PublicKey.(*rsa.PublicKey); !ok {
		return nil, fmt.Errorf("wssec: NewEncrypter: the certificate's key is %T; RSA is required", recipient.PublicKey)
	}
	return &Encrypter{cert: recipient}, nil
}

// Encrypt returns the envelope with an EncryptedKey and one EncryptedData
// per attachment in its security header (which it adds if there is none),
// and the attachments encrypted (application/octet-stream).
func (x *Encrypter) Encrypt(envelope []byte, atts []Attachment) ([]byte, []Attachment, error) {
	if len(atts) == 0 {
		return envelope, atts, nil
	}
	doc, err := parse(envelope)
	if err != nil {
		return nil, nil, fmt.Errorf("wssec: encrypting: %w", err)
	}
	env, e := readSOAP(doc)
	switch {
	case e != nil:
		return nil, nil, e
	case env.header == nil:
		return nil, nil, errors.New("wssec: encrypting: the envelope has no SOAP Header")
	case env.security != nil && env.security.encrypted:
		return nil, nil, errors.New("wssec: encrypting: the message is encrypted already")
	}
	key := make([]byte, 16)
	rand.Read(key)
	block, _ := aes.NewCipher(key)
	gcm, _ := cipher.NewGCM(block)
	out := make([]Attachment, len(atts))
	var refs, data strings.Builder
	for i, a := range atts {
		nonce := make([]byte, gcmNonceSize)
		rand.Read(nonce)
		out[i] = Attachment{ContentID: a.ContentID, ContentType: "application/octet-stream", Data: gcm.Seal(nonce, nonce, a.Data, nil)}
		id := "ED-" + randomID()
		refs.WriteString(`<xenc:DataReference URI="#` + id + `"></xenc:DataReference>`)
		data.WriteString(encryptedData(id, a))
	}
	wrapped, err := rsa.EncryptOAEPWithOptions(rand.Reader, x.cert.PublicKey.(*rsa.PublicKey), key, &rsa.OAEPOptions{Hash: crypto.SHA256, MGFHash: crypto.SHA256})
	if err != nil {
		return nil, nil, fmt.Errorf("wssec: encrypting the key: %w", err)
	}
	bstID := "X509-" + randomID()
	ek := `<wsse:BinarySecurityToken EncodingType="` + encBase64 + `" ValueType="` + tokenX509v3 + `" wsu:Id="` + bstID + `">` +
		base64.StdEncoding.EncodeToString(x.cert.Raw) + `</wsse:BinarySecurityToken>` +
		`<xenc:EncryptedKey xmlns:xenc="` + nsXENC + `" Id="EK-` + randomID() + `">` +
		`<xenc:EncryptionMethod Algorithm="` + algRSAOAEP11 + `"><ds:DigestMethod xmlns:ds="` + nsDS + `" Algorithm="` + algSHA256 + `"></ds:DigestMethod>` +
		`<xenc11:MGF xmlns:xenc11="` + nsXENC11 + `" Algorithm="` + algMGF1SHA256 + `"></xenc11:MGF></xenc:EncryptionMethod>` +
		`<ds:KeyInfo xmlns:ds="` + nsDS + `"><wsse:SecurityTokenReference><wsse:Reference URI="#` + bstID + `" ValueType="` + tokenX509v3 + `"></wsse:Reference></wsse:SecurityTokenReference></ds:KeyInfo>` +
		`<xenc:CipherData><xenc:CipherValue>` + base64.StdEncoding.EncodeToString(wrapped) + `</xenc:CipherValue></xenc:CipherData>` +
		`<xenc:ReferenceList>` + refs.String() + `</xenc:ReferenceList></xenc:EncryptedKey>` + data.String()
	if env.security == nil {
		mu := "true"
		if doc.root.space == nsSOAP11 {
			mu = "1"
		}
		sec := `<wsse:Security xmlns:wsse="` + nsWSSE + `" xmlns:wsu="` + nsWSU + `" xmlns:wssoap="` + doc.root.space + `" wssoap:mustUnderstand="` + mu + `">` + ek + `</wsse:Security>`
		return insertAfter(envelope, env.header.startTag[1], sec), out, nil
	}
	if uri, _ := env.security.el.lookup("wsu"); uri != nsWSU {
		ek = strings.Replace(ek, `<wsse:BinarySecurityToken `, `<wsse:BinarySecurityToken xmlns:wsu="`+nsWSU+`" `, 1)
	}
	if uri, _ := env.security.el.lookup("wsse"); uri != nsWSSE {
		return nil, nil, errors.New("wssec: encrypting: the security header does not bind the prefix wsse")
	}
	// Encrypted parts come first, so that the receiver decrypts before it
	// verifies the signature over the plaintext.
	return insertAfter(envelope, env.security.el.startTag[1], ek), out, nil
}

func encryptedData(id string, a Attachment) string {
	var mt, cid strings.Builder
	escapeAttr(&mt, a.ContentType)
	escapeAttr(&cid, "cid:"+a.ContentID)
	return `<xenc:EncryptedData xmlns:xenc="` + nsXENC + `" Id="` + id + `" MimeType="` + mt.String() + `" Type="` + typeAttachmentOnly + `">` +
		`<xenc:EncryptionMethod Algorithm="` + algAES128GCM + `"></xenc:EncryptionMethod>` +
		`<xenc:CipherData><xenc:CipherReference URI="` + cid.String() + `"><xenc:Transforms>` +
		`<ds:Transform xmlns:ds="` + nsDS + `" Algorithm="` + algAttachmentCipher + `"></ds:Transform>` +
		`</xenc:Transforms></xenc:CipherReference></xenc:CipherData></xenc:EncryptedData>`
}
