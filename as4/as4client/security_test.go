package as4client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/as4/as4client"
	"github.com/txinbox/txinbox/as4/internal/as4test"
	"github.com/txinbox/txinbox/as4/wssec"
	"github.com/txinbox/txinbox/as4/wssec/wssectest"
)

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
	c := as4test.NewClient(t, as4client.Config{URL: srv.URL, Security: as4test.PartnerSecurity(t, false)})
	_, err = c.Send(context.Background(), outgoing())
	se := as4test.SendError(t, err)
	if se.Permanent || !strings.Contains(se.Error(), "no reference URI=") {
		t.Fatalf("foreign NRR: %v", err)
	}
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
