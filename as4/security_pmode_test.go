package as4_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/wssec"
	"github.com/txinbox/txinbox/as4/wssec/wssectest"
)

// TestAgreementRequiresEncryption: require_encryption refuses a signed but
// unencrypted message with EBMS:0103 and stores nothing; the same message
// signed and encrypted is accepted.
func TestAgreementRequiresEncryption(t *testing.T) {
	as := []as4.Agreement{{Name: "enc", From: as4.PartyRef{ID: "partner", Type: "urn:test"}, To: as4.PartyRef{ID: "receiver", Type: "urn:test"},
		RequireSignature: true, RequireEncryption: true}}
	backends(t, options{agreements: as, security: securedEndpoint(t, false)}, func(t *testing.T, e *endpoint) {
		m := userMessage{id: newID(), from: "partner", payloads: [][]byte{[]byte("<Invoice/>")}}
		body, ct, _ := secureMIME(t, m, false)
		wantError(t, post(t, e.url, ct, body), http.StatusBadRequest, as4.PolicyNoncompliance)
		if n := e.count(t, "SELECT count(*) FROM txinbox_inbox"); n != 0 {
			t.Fatalf("an unencrypted message was stored (%d rows)", n)
		}
		body, ct, _ = secureMIME(t, m, true)
		wantReceipt(t, post(t, e.url, ct, body), m.id)
	})
}

// TestSignedReceiptInOtherSOAPVersion: a signed SOAP 1.1 message resent as
// SOAP 1.2 gets the original receipt rebuilt as SOAP 1.2 and signed again,
// the same bytes every time; both verify.
func TestSignedReceiptInOtherSOAPVersion(t *testing.T) {
	backends(t, options{security: securedEndpoint(t, true)}, func(t *testing.T, e *endpoint) {
		p := wssectest.Get(t)
		v, err := wssec.NewVerifier(wssec.VerifyConfig{Roots: p.Roots()})
		must(t, err)
		m := userMessage{id: newID(), from: "partner", payloads: [][]byte{[]byte("<a/>")}, soap11: true}
		body, ct, _ := signedMIME(t, m)
		body = bytes.Replace(body, []byte("application/soap+xml"), []byte("text/xml"), 1)
		ct = strings.Replace(ct, "application/soap+xml", "text/xml", 1)
		first := post(t, e.url, ct, body)
		wantReceipt(t, first, m.id)
		m.soap11 = false
		body, ct, _ = signedMIME(t, m)
		second := post(t, e.url, ct, body)
		wantReceipt(t, second, m.id)
		if !strings.HasPrefix(first.contentType, "text/xml") || !strings.HasPrefix(second.contentType, "application/soap+xml") {
			t.Fatalf("content types %q, %q", first.contentType, second.contentType)
		}
		for _, r := range []response{first, second} {
			got, err := v.Verify(r.body, nil)
			if err != nil || !got.Signed || !got.Certificate.Equal(p.Receiver) || !bytes.Contains(r.body, []byte("<ebbp:NonRepudiationInformation")) {
				t.Fatalf("receipt not a signed NRR: %v\n%s", err, r.body)
			}
		}
		if id := between(string(first.body), "<eb:MessageId>", "<"); id == "" || id != between(string(second.body), "<eb:MessageId>", "<") {
			t.Errorf("the rebuilt receipt has another MessageId")
		}
		if third := post(t, e.url, ct, body); !bytes.Equal(third.body, second.body) {
			t.Error("the SOAP 1.2 replay differs between resends")
		}
	})
}
