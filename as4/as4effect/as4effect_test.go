package as4effect_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4effect"
	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/effect"
)

// TestMessageParams: an AS4 message's parameters are those effect.Params
// documents for AS4, in its order ($1 scope ... $10 received_at); its parts
// are the outbox rows' parts with their MIME types; a message without a
// payload binds $9 as NULL and one without a From PartyId an empty source.
func TestMessageParams(t *testing.T) {
	at := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	m := &as4.Received{Scope: "as4", Key: "urn:a|mid-1", ReceivedAt: at,
		UserMessage: as4.UserMessage{MessageID: "mid-1", Action: "Deliver", ConversationID: "conv-7",
			From:    ebms.Party{IDs: []ebms.PartyID{{ID: "sender"}, {ID: "second"}}},
			To:      ebms.Party{IDs: []ebms.PartyID{{ID: "receiver"}}},
			Service: ebms.Service{Value: "invoicing"}},
		Parts: []as4.Part{{ContentType: "application/xml", Data: []byte("<a/>")}, {ContentType: "text/plain", Data: []byte("b")}}}
	got := as4effect.Message(m)
	want := [effect.MaxParams]any{"as4", "urn:a|mid-1", "mid-1", "sender", "receiver", "invoicing", "Deliver", "conv-7", []byte("<a/>"), at}
	if !reflect.DeepEqual(got.Params, want) {
		t.Errorf("Params = %v,\nwant %v", got.Params, want)
	}
	if got.Scope != "as4" || got.Key != "urn:a|mid-1" || got.Source != "sender" {
		t.Errorf("Scope, Key, Source = %q, %q, %q", got.Scope, got.Key, got.Source)
	}
	wantParts := []effect.Part{{ContentType: "application/xml", Payload: []byte("<a/>")}, {ContentType: "text/plain", Payload: []byte("b")}}
	if !reflect.DeepEqual(got.Parts, wantParts) {
		t.Errorf("Parts = %+v, want %+v", got.Parts, wantParts)
	}

	bare := as4effect.Message(&as4.Received{Scope: "as4", Key: "k"})
	if payload, _ := bare.Params[8].([]byte); payload != nil || bare.Params[3] != "" || len(bare.Parts) != 0 {
		t.Errorf("a message without payload or parties: Params = %v, Parts = %v", bare.Params, bare.Parts)
	}
}
