package as4client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/txinbox/txinbox/as4/as4client"
)

// phase4Duplicate is the signal phase4 answers a message it already has
// with: EBMS:0004 and this detail up to phase4 4.4 (captured from phase4
// 4.4.1 in internal/interop/phase4, signature left out), EBMS:4001
// DuplicateDetected from 4.5.0 on.
func phase4Duplicate(ref, code, short, detail string) string {
	return signalAnswer(`<eb:SignalMessage><eb:MessageInfo><eb:Timestamp>2026-12-06T05:33:07.732Z</eb:Timestamp>
<eb:MessageId>11f74368-3342-4082-a78d-b85122b5dcff@phase4</eb:MessageId><eb:RefToMessageId>` + ref + `</eb:RefToMessageId></eb:MessageInfo>
<eb:Error category="Content" errorCode="` + code + `" refToMessageInError="` + ref + `" severity="failure" shortDescription="` + short + `">
<eb:Description xml:lang="en">An undefined error occurred.</eb:Description>
<eb:ErrorDetail>` + detail + `</eb:ErrorDetail></eb:Error></eb:SignalMessage>`)
}

// TestSendDuplicateNotice: a partner that answers a resend with "I have
// this MessageId already" (phase4 does, where Domibus and txinbox replay
// the receipt) has the message: Send reports it delivered, with the
// notice as the answer to keep, instead of a permanent refusal (which left
// the outbox row failed although phase4 had delivered it). A duplicate
// notice about another MessageId, or another failure, is no such proof.
func TestSendDuplicateNotice(t *testing.T) {
	t.Parallel()
	m := outgoing()
	id := m.MessageID
	old := "Not invoking SPIs, because message with Message ID '" + id + "' was already handled (this is a duplicate)"
	for _, c := range []struct {
		name, answer string
		delivered    bool
	}{
		{"phase4 4.4", phase4Duplicate(id, "EBMS:0004", "Other", old), true},
		{"phase4 4.5", phase4Duplicate(id, "EBMS:4001", "DuplicateDetected", "duplicate"), true},
		{"another failure", phase4Duplicate(id, "EBMS:0004", "Other", "disk full"), false},
		{"4001 of another kind", phase4Duplicate(id, "EBMS:4001", "SomethingElse", "x"), false},
		{"about another message", phase4Duplicate("other@test", "EBMS:4001", "DuplicateDetected", "duplicate"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/soap+xml")
				w.Write([]byte(c.answer)) //nolint:errcheck // test server
			}))
			defer srv.Close()
			cl, err := as4client.New(as4client.Config{URL: srv.URL})
			must(t, err)
			res, err := cl.Send(context.Background(), m)
			if !c.delivered {
				if err == nil || (res != nil && res.Duplicate) {
					t.Fatalf("taken as delivered: %+v", res)
				}
				return
			}
			if err != nil {
				t.Fatalf("a duplicate notice: %v", err)
			}
			if !res.Duplicate || string(res.Receipt) != c.answer || res.ReceiptMessageID != "11f74368-3342-4082-a78d-b85122b5dcff@phase4" {
				t.Errorf("result %+v, want Duplicate with the notice as Receipt", res)
			}
		})
	}
}
