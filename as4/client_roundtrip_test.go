package as4_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4client"
	"github.com/txinbox/txinbox/as4/internal/as4test"
)

// The tests of this file send with package as4client to the endpoint:
// what the client writes the endpoint stores, and what the endpoint
// answers the client reads.

func outgoing() as4client.Outgoing { return as4test.Outgoing(newID()) }

func TestSendRoundTrip(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{})
	c := as4test.NewClient(t, as4client.Config{URL: e.url})
	m := outgoing()
	res, err := c.Send(context.Background(), m)
	must(t, err)
	if res.MessageID != m.MessageID || res.StatusCode != http.StatusOK || res.ReceiptMessageID == "" || len(res.Warnings) != 0 {
		t.Errorf("result %+v", res)
	}
	sig := signalOf(t, response{status: 200, contentType: res.ContentType, body: res.Receipt})
	if sig.Signal != "Receipt" || sig.RefToMessageID != m.MessageID || sig.MessageID != res.ReceiptMessageID {
		t.Errorf("receipt %+v", sig)
	}
	if n := e.count(t, `SELECT count(*) FROM txinbox_as4_messages WHERE message_id = $1 AND from_party = 'sender&co'
		AND from_party_type = 'urn:test' AND to_party = 'receiver' AND service = 'urn:test:invoicing' AND service_type = 'urn:svc-type'
		AND action = $2 AND conversation_id = 'conv-42' AND sent_at = '2026-11-30T09:00:00.123Z' AND receipt = $3
		AND user_message LIKE '%<eb:Role>urn:role:&lt;buyer&gt;</eb:Role>%' AND user_message LIKE '%<eb:AgreementRef>urn:agreement:1</eb:AgreementRef>%'`,
		m.MessageID, m.Action, res.Receipt); n != 1 {
		t.Errorf("%d stored messages with the sent header values and the returned receipt, want 1", n)
	}
	if n := e.count(t, `SELECT count(*) FROM txinbox_as4_payloads WHERE
		(part_index = 0 AND data = $1 AND content_type = 'application/xml; charset=UTF-8' AND mime_type = 'application/xml' AND content_id = 'payload-1@txinbox')
		OR (part_index = 1 AND data = $2 AND mime_type = 'application/octet-stream')`, m.Payloads[0].Data, m.Payloads[1].Data); n != 2 {
		t.Errorf("%d payload rows match, want 2", n)
	}

	// The resend (after a crash, say) is recognised: the same receipt, one message.
	again, err := c.Send(context.Background(), m)
	must(t, err)
	if !bytes.Equal(again.Receipt, res.Receipt) {
		t.Errorf("the resend got another receipt:\n%s\nwant:\n%s", again.Receipt, res.Receipt)
	}
	if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 1 {
		t.Errorf("%d stored messages, want 1", n)
	}
	if n := e.deliveries.Load(); n != 1 {
		t.Errorf("%d deliveries, want 1", n)
	}
}

func TestSendWithoutPayload(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{})
	m := outgoing()
	m.Payloads = nil
	_, err := as4test.NewClient(t, as4client.Config{URL: e.url}).Send(context.Background(), m)
	must(t, err)
	if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages WHERE message_id = $1", m.MessageID); n != 1 {
		t.Errorf("%d stored messages, want 1", n)
	}
}

// The endpoint's refusals: drift and a payload it cannot accept are
// permanent; a failure it asks to be retried (503) is not.
func TestSendRefusedByTheEndpoint(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{})
	c := as4test.NewClient(t, as4client.Config{URL: e.url})
	ctx := context.Background()

	m := outgoing()
	_, err := c.Send(ctx, m)
	must(t, err)
	m.Payloads[0].Data = []byte("<Invoice><ID>43</ID></Invoice>")
	_, err = c.Send(ctx, m)
	se := as4test.SendError(t, err)
	if se.Code != as4.ValueInconsistent || !se.Permanent || !as4client.IsPermanent(err) || se.StatusCode != http.StatusBadRequest ||
		se.Severity != "failure" || se.ShortDescription != "ValueInconsistent" || se.Detail == "" || se.RefToMessageInError != m.MessageID {
		t.Errorf("drift: %+v", se)
	}
	if !strings.Contains(err.Error(), "EBMS:0003") {
		t.Errorf("the error does not name the code: %v", err)
	}

	gz := outgoing()
	gz.Payloads[1].Properties = []as4.Property{{Name: "CompressionType", Value: "application/gzip"}}
	_, err = c.Send(ctx, gz)
	if se := as4test.SendError(t, err); se.Code != as4.DecompressionFailure || !se.Permanent {
		t.Errorf("not gzip: %+v", se)
	}
	if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 1 {
		t.Errorf("%d stored messages, want 1", n)
	}
}

func TestSendRetryableWhenTheEndpointAsksForIt(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{failFirstDelivery: true})
	c := as4test.NewClient(t, as4client.Config{URL: e.url})
	m := outgoing()
	_, err := c.Send(context.Background(), m)
	se := as4test.SendError(t, err)
	if se.Code != as4.Other || se.Permanent || as4client.IsPermanent(err) || se.StatusCode != http.StatusServiceUnavailable || se.RetryAfter <= 0 {
		t.Fatalf("failed delivery: %+v", se)
	}
	_, err = c.Send(context.Background(), m)
	must(t, err)
	if n := e.deliveries.Load(); n != 1 {
		t.Errorf("%d deliveries, want 1", n)
	}
}

// TestSecuredSendRoundTrip: a signed and encrypted message from the Client
// is decrypted, verified and stored by the endpoint, whose signed receipt
// the Client verifies against what it signed.
func TestSecuredSendRoundTrip(t *testing.T) {
	e := newSQLite(t, options{security: securedEndpoint(t, true)})
	c := as4test.NewClient(t, as4client.Config{URL: e.url, Security: as4test.PartnerSecurity(t, false)})
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
	c2 := as4test.NewClient(t, as4client.Config{URL: e.url, Security: as4test.PartnerSecurity(t, true)})
	_, err = c2.Send(context.Background(), m)
	se := as4test.SendError(t, err)
	if se.Permanent || !strings.Contains(se.Error(), "not trusted") {
		t.Fatalf("untrusted receipt: %v", err)
	}
}

func between(s, from, to string) string {
	_, rest, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(rest, to)
	return v
}
