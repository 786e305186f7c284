package wssec

import (
	"bytes"
	"crypto/x509"
	"testing"

	"github.com/txinbox/txinbox/as4/wssec/wssectest"
)

// receiverVerifier trusts the test CA and decrypts with the receiver's key.
func receiverVerifier(t *testing.T, p *wssectest.PKI) *Verifier {
	t.Helper()
	d, err := NewDecrypter(p.ReceiverKey, p.Receiver)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVerifier(VerifyConfig{Roots: p.Roots(), Decrypter: d})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func signedEncrypted(t *testing.T, p *wssectest.PKI, recipient *x509.Certificate) ([]byte, []Attachment, []Attachment) {
	t.Helper()
	plain := testAttachments()
	env, err := mustSigner(t, p.LeafKey, p.Leaf).Sign([]byte(userMessage), plain)
	if err != nil {
		t.Fatal(err)
	}
	x, err := NewEncrypter(recipient)
	if err != nil {
		t.Fatal(err)
	}
	env, enc, err := x.Encrypt(env, plain)
	if err != nil {
		t.Fatal(err)
	}
	return env, enc, plain
}

func TestSignEncryptRoundTrip(t *testing.T) {
	p := wssectest.Get(t)
	env, enc, plain := signedEncrypted(t, p, p.Receiver)
	for i := range enc {
		if bytes.Contains(enc[i].Data, plain[i].Data) || enc[i].ContentType != "application/octet-stream" {
			t.Fatalf("attachment %d not encrypted: %q %q", i, enc[i].ContentType, enc[i].Data)
		}
	}
	res, err := receiverVerifier(t, p).Verify(env, enc)
	if err != nil {
		t.Fatalf("%v\n%s", err, env)
	}
	if !res.Signed || !res.Encrypted || len(res.Attachments) != 2 {
		t.Fatalf("%+v", res)
	}
	for i := range plain {
		if !bytes.Equal(res.Attachments[i].Data, plain[i].Data) || res.Attachments[i].ContentType != plain[i].ContentType {
			t.Fatalf("attachment %d decrypted to %q %q", i, res.Attachments[i].ContentType, res.Attachments[i].Data)
		}
	}
}

func TestDecryptRefuses(t *testing.T) {
	p := wssectest.Get(t)
	env, enc, _ := signedEncrypted(t, p, p.Receiver)
	flipped := append([]Attachment(nil), enc...)
	flipped[1].Data = bytes.Clone(flipped[1].Data)
	flipped[1].Data[20] ^= 1
	_, err := receiverVerifier(t, p).Verify(env, flipped)
	wantCode(t, err, FailedDecryption, "authentication tag does not match")

	truncated := append([]Attachment(nil), enc...)
	truncated[0].Data = truncated[0].Data[:10]
	_, err = receiverVerifier(t, p).Verify(env, truncated)
	wantCode(t, err, FailedDecryption, "too short")

	_, err = verifierFor(t, p).Verify(env, enc)
	wantCode(t, err, FailedDecryption, "no decryption key")

	forOther, enc2, _ := signedEncrypted(t, p, p.Leaf)
	_, err = receiverVerifier(t, p).Verify(forOther, enc2)
	wantCode(t, err, FailedDecryption, "encrypted for another certificate")

	twice := bytes.Replace(env, []byte("</xenc:ReferenceList>"), []byte(`<xenc:DataReference URI="#`+string(between(env, `<xenc:DataReference URI="#`, `"`))+`"></xenc:DataReference></xenc:ReferenceList>`), 1)
	_, err = receiverVerifier(t, p).Verify(twice, enc)
	wantCode(t, err, FailedDecryption, "occurs twice")
}

// TestDecryptThenVerify: an attachment changed before encryption (a
// sender that encrypts other content than it signed) fails the signature.
func TestDecryptThenVerify(t *testing.T) {
	p := wssectest.Get(t)
	plain := testAttachments()
	env, err := mustSigner(t, p.LeafKey, p.Leaf).Sign([]byte(userMessage), plain)
	if err != nil {
		t.Fatal(err)
	}
	changed := append([]Attachment(nil), plain...)
	changed[1].Data = []byte("other")
	x, _ := NewEncrypter(p.Receiver)
	env, enc, err := x.Encrypt(env, changed)
	if err != nil {
		t.Fatal(err)
	}
	_, err = receiverVerifier(t, p).Verify(env, enc)
	wantCode(t, err, FailedAuthentication, "digest does not match")
}

func between(b []byte, from, to string) []byte {
	i := bytes.Index(b, []byte(from))
	if i < 0 {
		return nil
	}
	rest := b[i+len(from):]
	return rest[:bytes.Index(rest, []byte(to))]
}
