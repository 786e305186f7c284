package as4_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/wssec"
	"github.com/txinbox/txinbox/as4/wssec/wssectest"
)

// securedEndpoint is the security configuration of an endpoint that
// trusts the test CA and signs its receipts as the test receiver.
func securedEndpoint(t testing.TB, require bool) as4.SecurityConfig {
	p := wssectest.Get(t)
	d, err := wssec.NewDecrypter(p.ReceiverKey, p.Receiver)
	must(t, err)
	v, err := wssec.NewVerifier(wssec.VerifyConfig{Roots: p.Roots(), Decrypter: d})
	must(t, err)
	s, err := wssec.NewSigner(p.ReceiverKey, p.Receiver)
	must(t, err)
	return as4.SecurityConfig{Verifier: v, Signer: s, RequireSignature: require}
}

// signedMIME signs m as the test partner and packs it as multipart/related.
func signedMIME(t testing.TB, m userMessage) ([]byte, string, []wssec.Attachment) {
	return secureMIME(t, m, false)
}

// secureMIME signs m as the test partner, encrypts its payloads for the
// receiver if asked, and packs it; it returns the plaintext attachments.
func secureMIME(t testing.TB, m userMessage, encrypt bool) ([]byte, string, []wssec.Attachment) {
	t.Helper()
	p := wssectest.Get(t)
	s, err := wssec.NewSigner(p.LeafKey, p.Leaf)
	must(t, err)
	atts := make([]wssec.Attachment, len(m.payloads))
	for i, data := range m.payloads {
		typ := "application/xml"
		if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
			typ = "application/gzip" // compressed: signed as binary
		}
		atts[i] = wssec.Attachment{ContentID: fmt.Sprintf("part%d@test", i), ContentType: typ, Data: data}
	}
	env, err := s.Sign([]byte(m.envelope()), atts)
	must(t, err)
	sent := atts
	if encrypt {
		x, err := wssec.NewEncrypter(p.Receiver)
		must(t, err)
		env, sent, err = x.Encrypt(env, atts)
		must(t, err)
	}
	body, ct := mimeOf(env, sent)
	return body, ct, atts
}

func mimeOf(env []byte, atts []wssec.Attachment) ([]byte, string) {
	b := make([]byte, 6)
	rand.Read(b)
	boundary := "b-" + hex.EncodeToString(b)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "--%s\r\nContent-Type: application/soap+xml; charset=UTF-8\r\nContent-ID: <root@test>\r\n\r\n%s\r\n", boundary, env)
	for _, a := range atts {
		fmt.Fprintf(&buf, "--%s\r\nContent-Type: %s\r\nContent-Transfer-Encoding: binary\r\nContent-ID: <%s>\r\n\r\n", boundary, a.ContentType, a.ContentID)
		buf.Write(a.Data)
		buf.WriteString("\r\n")
	}
	fmt.Fprintf(&buf, "--%s--\r\n", boundary)
	return buf.Bytes(), fmt.Sprintf(`multipart/related; boundary="%s"; type="application/soap+xml"; start="<root@test>"`, boundary)
}

// TestSignedMessageGetsSignedNRR: a signed message is verified, stored
// once, and answered with a signed non-repudiation receipt that repeats
// the request signature's references; a resend gets the same receipt.
func TestSignedMessageGetsSignedNRR(t *testing.T) {
	backends(t, options{security: securedEndpoint(t, true)}, func(t *testing.T, e *endpoint) {
		p := wssectest.Get(t)
		m := userMessage{id: newID(), from: "partner", payloads: [][]byte{[]byte("<Invoice><ID>1</ID></Invoice>"), []byte("<Scan/>")}}
		body, ct, atts := signedMIME(t, m)
		r := post(t, e.url, ct, body)
		wantReceipt(t, r, m.id)

		v, err := wssec.NewVerifier(wssec.VerifyConfig{Roots: p.Roots()})
		must(t, err)
		got, err := v.Verify(r.body, nil)
		if err != nil || !got.Signed || !got.Certificate.Equal(p.Receiver) {
			t.Fatalf("receipt signature: %v %+v\n%s", err, got, r.body)
		}
		root := body[bytes.Index(body, []byte("<?xml")) : bytes.Index(body, []byte("</S12:Envelope>"))+len("</S12:Envelope>")]
		req, err := v.Verify(root, atts)
		must(t, err)
		if !bytes.Contains(r.body, []byte("<ebbp:NonRepudiationInformation")) || len(req.References) != 4 {
			t.Fatalf("no NRR for %d references:\n%s", len(req.References), r.body)
		}
		// The receipt repeats the verified references, as
		// NonRepudiationInformation writes them.
		var refs [][]byte
		for _, ref := range req.References {
			refs = append(refs, ref.XML)
		}
		nrr, err := as4.NonRepudiationInformation(refs)
		must(t, err)
		if !bytes.Contains(r.body, nrr) {
			t.Fatalf("the verified references are not the receipt's:\n%s\nwant %s", r.body, nrr)
		}
		again := post(t, e.url, ct, body)
		if !bytes.Equal(again.body, r.body) {
			t.Fatal("the resend got another receipt")
		}
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 1 || e.deliveries.Load() != 1 {
			t.Fatalf("%d messages stored, %d deliveries", n, e.deliveries.Load())
		}
	})
}

// TestBadSecurityRefused: changed content, an untrusted signer or no
// signature at all get the profile's error, and nothing is stored.
func TestBadSecurityRefused(t *testing.T) {
	backends(t, options{security: securedEndpoint(t, true)}, func(t *testing.T, e *endpoint) {
		p := wssectest.Get(t)
		m := userMessage{id: newID(), from: "partner", payloads: [][]byte{[]byte("<Invoice><ID>1</ID></Invoice>")}}
		body, ct, _ := signedMIME(t, m)
		tampered := bytes.Replace(body, []byte("<ID>1</ID>"), []byte("<ID>2</ID>"), 1)
		r := post(t, e.url, ct, tampered)
		wantError(t, r, http.StatusBadRequest, as4.FailedAuthentication)
		if sig := signalOf(t, r); sig.RefToMessageID != m.id {
			t.Fatalf("refToMessageInError %q, want %q", sig.RefToMessageID, m.id)
		}

		intruder, err := wssec.NewSigner(p.OtherLeafKey, p.OtherLeaf)
		must(t, err)
		env, err := intruder.Sign([]byte(m.envelope()), []wssec.Attachment{{ContentID: "part0@test", ContentType: "application/xml", Data: m.payloads[0]}})
		must(t, err)
		b, ct2 := mimeOf(env, []wssec.Attachment{{ContentID: "part0@test", ContentType: "application/xml", Data: m.payloads[0]}})
		wantError(t, post(t, e.url, ct2, b), http.StatusBadRequest, as4.FailedAuthentication)

		plain, ct3 := m.mime(false)
		wantError(t, post(t, e.url, ct3, plain), http.StatusBadRequest, as4.PolicyNoncompliance)
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 0 || e.deliveries.Load() != 0 {
			t.Fatalf("%d messages stored, %d deliveries after refusals", n, e.deliveries.Load())
		}
	})
}

// TestSignedReceiptVerifiedByWSS4J: Apache WSS4J verifies the endpoint's
// signed receipt (and refuses it changed).
func TestSignedReceiptVerifiedByWSS4J(t *testing.T) {
	jp := wssectest.JavaPeer(t)
	p := wssectest.Get(t)
	e := newSQLite(t, options{security: securedEndpoint(t, false)})
	m := userMessage{id: newID(), from: "partner", payloads: [][]byte{[]byte("<Invoice/>")}}
	body, ct, _ := signedMIME(t, m)
	r := post(t, e.url, ct, body)
	wantReceipt(t, r, m.id)
	dir := t.TempDir()
	_, ca := wssectest.WriteFiles(t, dir, "ca", nil, p.CA)
	wssectest.Write(t, filepath.Join(dir, "receipt.xml"), r.body)
	wssectest.Write(t, filepath.Join(dir, "changed.xml"), bytes.Replace(r.body, []byte(m.id), []byte("x"+m.id), 1))
	res := jp.Run(t, [][]string{{"verify", ca, filepath.Join(dir, "receipt.xml")}, {"verify", ca, filepath.Join(dir, "changed.xml")}})
	if !strings.HasPrefix(res[0], "ok Body(") || !strings.Contains(res[0], " Messaging(") {
		t.Fatalf("WSS4J on the receipt: %s\n%s", res[0], r.body)
	}
	if !strings.HasPrefix(res[1], "error ") {
		t.Fatalf("WSS4J accepted a changed receipt: %s", res[1])
	}
}

// TestEncryptedMessageStoredDecrypted: a signed and encrypted message is
// decrypted, verified and stored as plaintext; changed ciphertext gets
// EBMS:0102 and nothing is stored.
func TestEncryptedMessageStoredDecrypted(t *testing.T) {
	backends(t, options{security: securedEndpoint(t, true)}, func(t *testing.T, e *endpoint) {
		p := wssectest.Get(t)
		m := userMessage{id: newID(), from: "partner", payloads: [][]byte{[]byte("<Invoice><ID>7</ID></Invoice>")}}
		s, err := wssec.NewSigner(p.LeafKey, p.Leaf)
		must(t, err)
		plain := []wssec.Attachment{{ContentID: "part0@test", ContentType: "application/xml", Data: m.payloads[0]}}
		env, err := s.Sign([]byte(m.envelope()), plain)
		must(t, err)
		x, err := wssec.NewEncrypter(p.Receiver)
		must(t, err)
		env, enc, err := x.Encrypt(env, plain)
		must(t, err)

		bad := append([]wssec.Attachment(nil), enc...)
		bad[0].Data = bytes.Clone(bad[0].Data)
		bad[0].Data[13] ^= 0x40
		body, ct := mimeOf(env, bad)
		wantError(t, post(t, e.url, ct, body), http.StatusBadRequest, as4.FailedDecryption)
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 0 {
			t.Fatalf("%d messages stored after a failed decryption", n)
		}

		body, ct = mimeOf(env, enc)
		wantReceipt(t, post(t, e.url, ct, body), m.id)
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_payloads WHERE data = $1", m.payloads[0]); n != 1 {
			t.Fatalf("%d plaintext payloads stored", n)
		}
	})
}

// TestEncryptedUnsignedMessage: without RequireSignature an encrypted,
// unsigned message is decrypted (its security header is understood) and
// gets a plain receipt.
func TestEncryptedUnsignedMessage(t *testing.T) {
	p := wssectest.Get(t)
	e := newSQLite(t, options{security: securedEndpoint(t, false)})
	m := userMessage{id: newID(), from: "partner", payloads: [][]byte{[]byte("<Invoice><ID>8</ID></Invoice>")}}
	x, err := wssec.NewEncrypter(p.Receiver)
	must(t, err)
	env, enc, err := x.Encrypt([]byte(m.envelope()), []wssec.Attachment{{ContentID: "part0@test", ContentType: "application/xml", Data: m.payloads[0]}})
	must(t, err)
	body, ct := mimeOf(env, enc)
	r := post(t, e.url, ct, body)
	wantReceipt(t, r, m.id)
	if bytes.Contains(r.body, []byte("NonRepudiationInformation")) {
		t.Fatal("an unsigned message got a non-repudiation receipt")
	}
	if n := e.count(t, "SELECT count(*) FROM txinbox_as4_payloads WHERE data = ?", m.payloads[0]); n != 1 {
		t.Fatalf("%d plaintext payloads stored", n)
	}
}
