package as4_test

import (
	"context"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/wssec"
	"github.com/txinbox/txinbox/as4/wssec/wssectest"
)

// partnerSecurity is the client side of securedEndpoint: it signs as the
// test partner, encrypts for the receiver and verifies receipts through
// roots.
func partnerSecurity(t *testing.T, verifyWithOtherCA bool) as4.ClientSecurity {
	p := wssectest.Get(t)
	s, err := wssec.NewSigner(p.LeafKey, p.Leaf)
	must(t, err)
	x, err := wssec.NewEncrypter(p.Receiver)
	must(t, err)
	roots := p.Roots()
	if verifyWithOtherCA {
		other, _ := wssec.NewVerifier(wssec.VerifyConfig{Roots: rootsOf(p.OtherCA)})
		return as4.ClientSecurity{Signer: s, Encrypter: x, ReceiptVerifier: other}
	}
	v, err := wssec.NewVerifier(wssec.VerifyConfig{Roots: roots})
	must(t, err)
	return as4.ClientSecurity{Signer: s, Encrypter: x, ReceiptVerifier: v}
}

// TestSecuredSendRoundTrip: a signed and encrypted message from the Client
// is decrypted, verified and stored by the endpoint, whose signed receipt
// the Client verifies against what it signed.
func TestSecuredSendRoundTrip(t *testing.T) {
	e := newSQLite(t, options{security: securedEndpoint(t, true)})
	c := newClient(t, as4.ClientConfig{URL: e.url, Security: partnerSecurity(t, false)})
	m := outgoing()
	res, err := c.Send(context.Background(), m)
	must(t, err)
	if !strings.Contains(string(res.Receipt), "NonRepudiationInformation") {
		t.Fatalf("receipt:\n%s", res.Receipt)
	}
	if n := e.count(t, "SELECT count(*) FROM txinbox_as4_payloads WHERE data = ?", m.Payloads[0].Data); n != 1 {
		t.Fatalf("%d plaintext payloads stored", n)
	}
	// The receipt is signed by a certificate this client does not trust.
	c2 := newClient(t, as4.ClientConfig{URL: e.url, Security: partnerSecurity(t, true)})
	_, err = c2.Send(context.Background(), m)
	se := sendError(t, err)
	if se.Permanent || !strings.Contains(se.Error(), "not trusted") {
		t.Fatalf("untrusted receipt: %v", err)
	}
}

// TestSecuredSendRefusesForeignNRR: a validly signed receipt whose
// non-repudiation information does not repeat the sent digests proves
// nothing.
func TestSecuredSendRefusesForeignNRR(t *testing.T) {
	p := wssectest.Get(t)
	signer, err := wssec.NewSigner(p.ReceiverKey, p.Receiver)
	must(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ref := between(readAll(t, r), "<eb:MessageId>", "</eb:MessageId>")
		receipt := `<S12:Envelope xmlns:S12="http://www.w3.org/2003/05/soap-envelope" xmlns:eb="http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/"><S12:Header><eb:Messaging S12:mustUnderstand="true"><eb:SignalMessage><eb:MessageInfo><eb:Timestamp>2026-11-30T10:00:00Z</eb:Timestamp><eb:MessageId>r1@test</eb:MessageId><eb:RefToMessageId>` + ref + `</eb:RefToMessageId></eb:MessageInfo><eb:Receipt><ebbp:NonRepudiationInformation xmlns:ebbp="http://docs.oasis-open.org/ebxml-bp/ebbp-signals-2.0"><ebbp:MessagePartNRInformation><ds:Reference xmlns:ds="http://www.w3.org/2000/09/xmldsig#" URI="cid:payload-1@txinbox"><ds:DigestMethod Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"/><ds:DigestValue>AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=</ds:DigestValue></ds:Reference></ebbp:MessagePartNRInformation></ebbp:NonRepudiationInformation></eb:Receipt></eb:SignalMessage></eb:Messaging></S12:Header><S12:Body/></S12:Envelope>`
		signed, err := signer.Sign([]byte(receipt), nil)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "application/soap+xml")
		w.Write(signed)
	}))
	defer srv.Close()
	c := newClient(t, as4.ClientConfig{URL: srv.URL, Security: partnerSecurity(t, false)})
	_, err = c.Send(context.Background(), outgoing())
	se := sendError(t, err)
	if se.Permanent || !strings.Contains(se.Error(), "no reference URI=") {
		t.Fatalf("foreign NRR: %v", err)
	}
}

func rootsOf(certs ...*x509.Certificate) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool
}

func readAll(t *testing.T, r *http.Request) string {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Error(err)
	}
	return string(b)
}

func between(s, from, to string) string {
	_, rest, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(rest, to)
	return v
}
