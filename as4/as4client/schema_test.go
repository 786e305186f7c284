package as4client

import (
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/internal/wire"
	"github.com/txinbox/txinbox/as4/internal/xsdcheck"
	"github.com/txinbox/txinbox/as4/wssec"
	"github.com/txinbox/txinbox/as4/wssec/wssectest"
	"github.com/txinbox/txinbox/edi/ebms"
)

// TestClientUserMessagesValidAgainstSchemas validates what Client sends: the root part of a message with every optional field, and of a
// minimal one.
func TestClientUserMessagesValidAgainstSchemas(t *testing.T) {
	full := Outgoing{
		MessageID: "m1@txinbox", RefToMessageID: "m0@partner", Timestamp: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC),
		From:         ebms.Party{IDs: []ebms.PartyID{{Type: "urn:test", ID: "us"}}},
		To:           ebms.Party{IDs: []ebms.PartyID{{ID: "them"}}, Role: "urn:test:role"},
		AgreementRef: as4.AgreementRef{Value: "urn:test:agreement", Type: "t", PMode: "pm"},
		Service:      ebms.Service{Type: "urn:test:t", Value: "urn:test:service"}, Action: "Submit <&>", MPC: "urn:test:mpc",
		Properties: []as4.Property{{Name: "originalSender", Type: "t", Value: "a"}},
		Payloads:   []Payload{{ContentID: "p1@txinbox", ContentType: "application/xml", Data: []byte("<x/>")}, {Data: []byte("bin")}},
	}
	minimal := Outgoing{MessageID: "m2@txinbox", Timestamp: full.Timestamp, From: full.From, To: full.To, Service: ebms.Service{Value: "s"}, Action: "a"}
	for name, m := range map[string]Outgoing{"full": full, "minimal": minimal} {
		m = m.withDefaults()
		must(t, m.validate())
		body, ct, err := m.encode()
		must(t, err)
		root, _, err := wire.SplitMIME(body, ct)
		must(t, err)
		xsdcheck.Validate(t, "client user message "+name, root)
	}
}

// TestClientSecuredMessagesValidAgainstSchemas validates the root part of
// what a Client with Security sends, signed and signed then encrypted:
// the SOAP envelope, eb:Messaging, ds:Signature (XML Signature schema)
// and xenc:EncryptedKey/EncryptedData (XML Encryption schema). No official
// WS-Security schema is at hand offline: wsse:Security and wsu:Id are
// checked laxly (through the SOAP header's wildcard), what they hold
// strictly where it is of the namespaces above.
func TestClientSecuredMessagesValidAgainstSchemas(t *testing.T) {
	p := wssectest.Get(t)
	signer, err := wssec.NewSigner(p.LeafKey, p.Leaf)
	must(t, err)
	encrypter, err := wssec.NewEncrypter(p.Receiver)
	must(t, err)
	m := Outgoing{
		MessageID: "m1@txinbox", Timestamp: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC),
		From: ebms.Party{IDs: []ebms.PartyID{{ID: "us"}}}, To: ebms.Party{IDs: []ebms.PartyID{{ID: "them"}}},
		Service: ebms.Service{Value: "urn:test:service"}, Action: "Submit",
		Payloads: []Payload{{ContentID: "p1@txinbox", ContentType: "application/xml", Data: []byte("<x/>")}, {Data: []byte("bin")}},
	}.withDefaults()
	must(t, m.validate())
	for name, sec := range map[string]Security{"signed": {Signer: signer}, "signed and encrypted": {Signer: signer, Encrypter: encrypter}} {
		c := &Client{cfg: Config{Security: sec}}
		body, ct, _, err := c.encode(&m)
		must(t, err)
		root, _, err := wire.SplitMIME(body, ct)
		must(t, err)
		xsdcheck.Validate(t, "client user message "+name, root)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
