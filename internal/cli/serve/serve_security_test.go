package serve_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
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

// TestServeAS4TrustRequiresSignature: --as4-trust alone refuses an
// unsigned message (one whose signature was stripped is one) with
// EBMS:0103; with --as4-allow-unsigned it is accepted as unsigned.
func TestServeAS4TrustRequiresSignature(t *testing.T) {
	p := wssectest.Get(t)
	dir := t.TempDir()
	trustFile := filepath.Join(dir, "trust.pem")
	wssectest.Write(t, trustFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.CA.Raw}))
	for _, allow := range []bool{false, true} {
		args := []string{"--db", filepath.Join(dir, fmt.Sprintf("inbox-%v.db", allow)), "--no-purge", "--as4-trust", trustFile}
		if allow {
			args = append(args, "--as4-allow-unsigned")
		}
		url, stop, errs := startServe(t, args...)
		plain, err := as4client.New(as4client.Config{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		_, err = plain.Send(context.Background(), testOutgoing("unsigned-1@test"))
		if refused := err != nil && strings.Contains(err.Error(), "EBMS:0103"); refused == allow {
			t.Errorf("--as4-allow-unsigned %v: unsigned message: %v", allow, err)
		}
		if code := stop(); code != clikit.ExitOK {
			t.Errorf("serve exited %d: %s", code, errs)
		}
	}
}

// TestServeAS4KeystoreAlias: --as4-keystore takes a JKS or PKCS#12 key
// store with two keys (Domibus' gateway_keystore) by --as4-key-alias
// (also from --config), and without it refuses to start, naming the
// aliases.
func TestServeAS4KeystoreAlias(t *testing.T) {
	p := wssectest.Get(t)
	dir := t.TempDir()
	trustFile, pwFile := filepath.Join(dir, "trust.pem"), filepath.Join(dir, "pw")
	wssectest.Write(t, trustFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.CA.Raw}))
	wssectest.Write(t, pwFile, []byte("test123\n"))
	for _, ks := range []string{"gateway_keystore.jks", "gateway_keystore.p12"} {
		file := filepath.Join("..", "..", "..", "as4", "wssec", "testdata", "domibus", ks)
		base := []string{"serve", "--db", filepath.Join(dir, "x.db"), "--as4-listen", "127.0.0.1:0", "--as4-trust", trustFile,
			"--as4-keystore", file, "--as4-keystore-password-file", pwFile}
		_, errs, code := run(t, base...)
		if code == clikit.ExitOK || !strings.Contains(errs, `"blue_gw"`) || !strings.Contains(errs, "--as4-key-alias") {
			t.Errorf("%s without an alias: code %d, %q", ks, code, errs)
		}
		config := filepath.Join(dir, "serve.yaml")
		wssectest.Write(t, config, []byte("as4-key-alias: red_gw\n"))
		url, stop, errs2 := startServe(t, append(append(base[1:3:3], base[5:]...), "--config", config)...)
		if !strings.HasPrefix(url, "http") {
			t.Fatalf("%s with an alias: %s", ks, errs2)
		}
		if code := stop(); code != clikit.ExitOK {
			t.Errorf("%s: serve exited %d: %s", ks, code, errs2)
		}
	}
	for _, args := range [][]string{{"--as4-allow-unsigned"}, {"--as4-key-alias", "a"}} {
		_, errs, code := run(t, append([]string{"serve", "--db", filepath.Join(dir, "y.db"), "--as4-listen", "127.0.0.1:0"}, args...)...)
		if code != clikit.ExitUsage || !strings.Contains(errs, args[0]) {
			t.Errorf("%v: code %d, %q", args, code, errs)
		}
	}
}

func testOutgoing(id string) as4client.Outgoing {
	return as4client.Outgoing{MessageID: id, Timestamp: time.Now(),
		From:    ebms.Party{IDs: []ebms.PartyID{{Type: "urn:test", ID: "sender"}}},
		To:      ebms.Party{IDs: []ebms.PartyID{{Type: "urn:test", ID: "receiver"}}},
		Service: ebms.Service{Value: "urn:test:invoicing"}, Action: "Submit", ConversationID: "c1",
		Payloads: []as4client.Payload{{ContentType: "application/xml", Data: []byte("<Invoice><ID>1</ID></Invoice>")}}}
}
