package serve_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4/as4client"
	"github.com/txinbox/txinbox/as4/wssec"
	"github.com/txinbox/txinbox/as4/wssec/wssectest"
	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// TestServeAS4Security: serve with --as4-key/--as4-cert/--as4-trust and
// --as4-require-signature decrypts and verifies a message the Go client
// signed and encrypted, answers with a signed receipt the client verifies
// against what it signed, and refuses an unsigned message.
func TestServeAS4Security(t *testing.T) {
	p := wssectest.Get(t)
	dir := t.TempDir()
	key, err := x509.MarshalPKCS8PrivateKey(p.ReceiverKey)
	if err != nil {
		t.Fatal(err)
	}
	keyFile, certFile, trustFile := filepath.Join(dir, "key.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "trust.pem")
	wssectest.Write(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}))
	wssectest.Write(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Receiver.Raw}))
	wssectest.Write(t, trustFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.CA.Raw}))
	url, stop, errs := startServe(t, "--db", filepath.Join(dir, "inbox.db"), "--no-purge",
		"--as4-key", keyFile, "--as4-cert", certFile, "--as4-trust", trustFile, "--as4-require-signature")
	defer func() {
		if code := stop(); code != clikit.ExitOK {
			t.Errorf("serve exited %d: %s", code, errs)
		}
	}()

	s, err := wssec.NewSigner(p.LeafKey, p.Leaf)
	if err != nil {
		t.Fatal(err)
	}
	x, err := wssec.NewEncrypter(p.Receiver)
	if err != nil {
		t.Fatal(err)
	}
	v, err := wssec.NewVerifier(wssec.VerifyConfig{Roots: p.Roots()})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(id string) as4client.Outgoing {
		return as4client.Outgoing{MessageID: id, Timestamp: time.Now(),
			From:    ebms.Party{IDs: []ebms.PartyID{{Type: "urn:test", ID: "sender"}}},
			To:      ebms.Party{IDs: []ebms.PartyID{{Type: "urn:test", ID: "receiver"}}},
			Service: ebms.Service{Value: "urn:test:invoicing"}, Action: "Submit", ConversationID: "c1",
			Payloads: []as4client.Payload{{ContentType: "application/xml", Data: []byte("<Invoice><ID>1</ID></Invoice>")}}}
	}
	secured, err := as4client.New(as4client.Config{URL: url, Security: as4client.Security{Signer: s, Encrypter: x, ReceiptVerifier: v}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := secured.Send(context.Background(), msg("signed-1@test"))
	if err != nil {
		t.Fatalf("signed and encrypted send: %v\n%s", err, errs)
	}
	if got, err := v.Verify(res.Receipt, nil); err != nil || !got.Signed || !got.Certificate.Equal(p.Receiver) ||
		!strings.Contains(string(res.Receipt), "ebbp:NonRepudiationInformation") {
		t.Fatalf("receipt not a signed NRR by the endpoint's key (%v):\n%s", err, res.Receipt)
	}

	plain, err := as4client.New(as4client.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	_, err = plain.Send(context.Background(), msg("unsigned-1@test"))
	if err == nil || !strings.Contains(err.Error(), "EBMS:0103") {
		t.Fatalf("unsigned message: %v", err)
	}
}
