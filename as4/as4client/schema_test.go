package as4client

import (
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/internal/wire"
	"github.com/txinbox/txinbox/as4/internal/xsdcheck"
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

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
