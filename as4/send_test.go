package as4_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/edi/ebms"
)

// outgoing is a message to the test endpoint with values that need XML
// escaping, a text payload and a binary one.
func outgoing() as4.Outgoing {
	return as4.Outgoing{
		MessageID:      newID(),
		Timestamp:      time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.FixedZone("CET", 3600)),
		From:           ebms.Party{IDs: []ebms.PartyID{{Type: "urn:test", ID: "sender&co"}}},
		To:             ebms.Party{IDs: []ebms.PartyID{{Type: "urn:test", ID: "receiver"}}, Role: "urn:role:<buyer>"},
		Service:        ebms.Service{Type: "urn:svc-type", Value: "urn:test:invoicing"},
		Action:         `Submit "a" & <b>`,
		ConversationID: "conv-42",
		AgreementRef:   as4.AgreementRef{Value: "urn:agreement:1"},
		Payloads: []as4.Payload{
			{ContentType: "application/xml; charset=UTF-8", Data: []byte("<Invoice><ID>42</ID></Invoice>")},
			{ContentType: "application/octet-stream", Data: []byte{0, 1, 2, '\r', '\n', '-', '-', 0xff}},
		},
	}
}

func newClient(t testing.TB, cfg as4.ClientConfig) *as4.Client {
	t.Helper()
	c, err := as4.NewClient(cfg)
	must(t, err)
	return c
}

func sendError(t testing.TB, err error) *as4.SendError {
	t.Helper()
	var se *as4.SendError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T), want a *as4.SendError", err, err)
	}
	return se
}

func TestSendRoundTrip(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{})
	c := newClient(t, as4.ClientConfig{URL: e.url})
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
	_, err := newClient(t, as4.ClientConfig{URL: e.url}).Send(context.Background(), m)
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
	c := newClient(t, as4.ClientConfig{URL: e.url})
	ctx := context.Background()

	m := outgoing()
	_, err := c.Send(ctx, m)
	must(t, err)
	m.Payloads[0].Data = []byte("<Invoice><ID>43</ID></Invoice>")
	_, err = c.Send(ctx, m)
	se := sendError(t, err)
	if se.Code != as4.ValueInconsistent || !se.Permanent || !as4.IsPermanent(err) || se.StatusCode != http.StatusBadRequest ||
		se.Severity != "failure" || se.ShortDescription != "ValueInconsistent" || se.Detail == "" || se.RefToMessageInError != m.MessageID {
		t.Errorf("drift: %+v", se)
	}
	if !strings.Contains(err.Error(), "EBMS:0003") {
		t.Errorf("the error does not name the code: %v", err)
	}

	gz := outgoing()
	gz.Payloads[1].Properties = []as4.Property{{Name: "CompressionType", Value: "application/gzip"}}
	_, err = c.Send(ctx, gz)
	if se := sendError(t, err); se.Code != as4.DecompressionFailure || !se.Permanent {
		t.Errorf("not gzip: %+v", se)
	}
	if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 1 {
		t.Errorf("%d stored messages, want 1", n)
	}
}

func TestSendRetryableWhenTheEndpointAsksForIt(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{failFirstDelivery: true})
	c := newClient(t, as4.ClientConfig{URL: e.url})
	m := outgoing()
	_, err := c.Send(context.Background(), m)
	se := sendError(t, err)
	if se.Code != as4.Other || se.Permanent || as4.IsPermanent(err) || se.StatusCode != http.StatusServiceUnavailable || se.RetryAfter <= 0 {
		t.Fatalf("failed delivery: %+v", se)
	}
	_, err = c.Send(context.Background(), m)
	must(t, err)
	if n := e.deliveries.Load(); n != 1 {
		t.Errorf("%d deliveries, want 1", n)
	}
}

// signalAnswer is a handcrafted answer with the given signal units.
func signalAnswer(units ...string) string {
	return `<?xml version="1.0" encoding="UTF-8"?><S12:Envelope xmlns:S12="http://www.w3.org/2003/05/soap-envelope"
 xmlns:eb="http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/"><S12:Header><eb:Messaging S12:mustUnderstand="true">` +
		strings.Join(units, "") + `</eb:Messaging></S12:Header><S12:Body/></S12:Envelope>`
}

func receiptUnit(ref string) string {
	return `<eb:SignalMessage><eb:MessageInfo><eb:Timestamp>2026-01-01T00:00:00Z</eb:Timestamp><eb:MessageId>rcpt@partner</eb:MessageId>
<eb:RefToMessageId>` + ref + `</eb:RefToMessageId></eb:MessageInfo><eb:Receipt><x/></eb:Receipt></eb:SignalMessage>`
}

func errorUnit(ref, code, severity string) string {
	return `<eb:SignalMessage><eb:MessageInfo><eb:Timestamp>2026-01-01T00:00:00Z</eb:Timestamp><eb:MessageId>err@partner</eb:MessageId></eb:MessageInfo>
<eb:Error origin="ebMS" category="Content" errorCode="` + code + `" severity="` + severity + `" refToMessageInError="` + ref + `" shortDescription="Short">
<eb:Description xml:lang="en">described</eb:Description><eb:ErrorDetail> the detail </eb:ErrorDetail></eb:Error></eb:SignalMessage>`
}

// TestSendAnswers runs Send against handcrafted partner answers.
func TestSendAnswers(t *testing.T) {
	t.Parallel()
	const id = "msg-1@test"
	type want struct {
		ok        bool
		permanent bool
		code      as4.ErrorCode
		warnings  int
		reason    string // in the error
	}
	multipart := "--B\r\nContent-Type: application/soap+xml\r\nContent-ID: <r>\r\n\r\n" + signalAnswer(receiptUnit(id)) + "\r\n--B--\r\n"
	tests := []struct {
		name   string
		status int
		ct     string
		body   string
		want   want
	}{
		{"receipt", 200, "application/soap+xml", signalAnswer(receiptUnit(id)), want{ok: true}},
		{"receipt in a multipart answer", 200, `multipart/related; boundary=B; start="<r>"`, multipart, want{ok: true}},
		{"receipt with a warning", 200, "application/soap+xml", signalAnswer(receiptUnit(id), errorUnit(id, "EBMS:0006", "warning")), want{ok: true, warnings: 1}},
		{"receipt for another message", 200, "application/soap+xml", signalAnswer(receiptUnit("other@test")), want{reason: `"other@test"`}},
		{"receipt with a 500", 500, "application/soap+xml", signalAnswer(receiptUnit(id)), want{reason: "HTTP 500"}},
		{"failure", 200, "application/soap+xml", signalAnswer(errorUnit(id, "EBMS:0004", "failure")), want{permanent: true, code: as4.Other}},
		{"failure without ref", 400, "text/xml", signalAnswer(errorUnit("", "EBMS:0009", "failure")), want{permanent: true, code: as4.InvalidHeader}},
		{"failure and receipt", 200, "application/soap+xml", signalAnswer(receiptUnit(id), errorUnit(id, "EBMS:0003", "failure")), want{permanent: true, code: as4.ValueInconsistent}},
		{"failure for another message", 400, "application/soap+xml", signalAnswer(errorUnit("other@test", "EBMS:0004", "failure")), want{reason: `"other@test"`}},
		{"failure with 503", 503, "application/soap+xml", signalAnswer(errorUnit(id, "EBMS:0004", "failure")), want{code: as4.Other}},
		{"failure with 429", 429, "application/soap+xml", signalAnswer(errorUnit(id, "EBMS:0004", "failure")), want{code: as4.Other}},
		{"warning only", 200, "application/soap+xml", signalAnswer(errorUnit(id, "EBMS:0006", "warning")), want{code: as4.EmptyMessagePartitionChannel, reason: "warnings without a receipt"}},
		{"500 text", 500, "text/plain", "boom", want{reason: "HTTP 500"}},
		{"502 empty", 502, "", "", want{reason: "empty body"}},
		{"200 empty", 200, "", "", want{reason: "no receipt"}},
		{"SOAP fault", 500, "text/xml", `<S11:Envelope xmlns:S11="http://schemas.xmlsoap.org/soap/envelope/"><S11:Body><S11:Fault><faultcode>S11:Server</faultcode><faultstring>db down</faultstring></S11:Fault></S11:Body></S11:Envelope>`, want{reason: "db down"}},
		{"not XML", 200, "application/soap+xml", "<<<", want{reason: "not a SOAP envelope"}},
		{"other root", 200, "application/xml", "<html/>", want{reason: "not a SOAP envelope"}},
		{"ISO-8859-1", 200, "text/xml", `<?xml version="1.0" encoding="ISO-8859-1"?>` + signalAnswer(receiptUnit(id))[38:], want{reason: "ISO-8859-1"}},
		{"truncated multipart", 200, `multipart/related; boundary=B`, multipart[:40], want{reason: "not a SOAP envelope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.ct != "" {
					w.Header().Set("Content-Type", tt.ct)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			m := outgoing()
			m.MessageID = id
			res, err := newClient(t, as4.ClientConfig{URL: srv.URL}).Send(context.Background(), m)
			if tt.want.ok {
				must(t, err)
				if len(res.Warnings) != tt.want.warnings || res.ReceiptMessageID != "rcpt@partner" || !bytes.Contains(res.Receipt, []byte("eb:Receipt")) {
					t.Errorf("result %+v", res)
				}
				return
			}
			se := sendError(t, err)
			if se.Permanent != tt.want.permanent || as4.IsPermanent(err) != tt.want.permanent || se.Code != tt.want.code || se.StatusCode != tt.status {
				t.Errorf("got %+v, want %+v", se, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want.reason) || (tt.want.code != "" && !strings.Contains(err.Error(), string(tt.want.code))) {
				t.Errorf("error %q lacks %q / %q", err, tt.want.reason, tt.want.code)
			}
			if tt.want.permanent && (se.Detail != "the detail" || se.Description != "described" || se.Severity != "failure" || se.ShortDescription != "Short") {
				t.Errorf("ebMS error fields not carried: %+v", se.ReportedError)
			}
		})
	}
}

func TestSendBoundsTheAnswer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/soap+xml")
		w.Write(bytes.Repeat([]byte("<a>"), 1<<20)) // 3 MiB; the write fails when the client hangs up
	}))
	defer srv.Close()
	_, err := newClient(t, as4.ClientConfig{URL: srv.URL, MaxResponseBytes: 4096}).Send(context.Background(), outgoing())
	se := sendError(t, err)
	if se.Permanent || !strings.Contains(err.Error(), "larger than 4096 bytes") {
		t.Errorf("got %v", err)
	}
}

func TestSendTransportFailuresAreRetryable(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	_, err := newClient(t, as4.ClientConfig{URL: closed.URL}).Send(context.Background(), outgoing())
	if se := sendError(t, err); se.Permanent || se.StatusCode != 0 || se.Err == nil {
		t.Errorf("closed server: %+v", se)
	}

	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer slow.Close()
	defer close(hang)
	_, err = newClient(t, as4.ClientConfig{URL: slow.URL, Timeout: 50 * time.Millisecond}).Send(context.Background(), outgoing())
	if se := sendError(t, err); se.Permanent || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timeout: %+v", se)
	}
}

func TestOutgoingIsValidatedBeforeSending(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	c := newClient(t, as4.ClientConfig{URL: srv.URL})
	tests := []struct {
		field  string
		change func(m *as4.Outgoing)
	}{
		{"MessageID", func(m *as4.Outgoing) { m.MessageID = "" }},
		{"MessageID", func(m *as4.Outgoing) { m.MessageID = "a b@x" }},
		{"MessageID", func(m *as4.Outgoing) { m.MessageID = "<a@x>" }},
		{"MessageID", func(m *as4.Outgoing) { m.MessageID = strings.Repeat("a", 256) }},
		{"RefToMessageID", func(m *as4.Outgoing) { m.RefToMessageID = "x\ny" }},
		{"Timestamp", func(m *as4.Outgoing) { m.Timestamp = time.Time{} }},
		{"Service.Value", func(m *as4.Outgoing) { m.Service.Value = "" }},
		{"Action", func(m *as4.Outgoing) { m.Action = " " }},
		{"Action", func(m *as4.Outgoing) { m.Action = "a\x00b" }},
		{"Action", func(m *as4.Outgoing) { m.Action = "Submit " }},
		{"From.IDs", func(m *as4.Outgoing) { m.From.IDs = nil }},
		{"To.IDs[0].ID", func(m *as4.Outgoing) { m.To.IDs[0].ID = "" }},
		{"From.IDs[0].Type", func(m *as4.Outgoing) { m.From.IDs[0].Type = "\xff" }},
		{"Properties[0].Value", func(m *as4.Outgoing) { m.Properties = []as4.Property{{Name: "n", Value: "\x01"}} }},
		{"Payloads[0].ContentType", func(m *as4.Outgoing) { m.Payloads[0].ContentType = "text/plain\r\nX-Injected: 1" }},
		{"Payloads[0].ContentType", func(m *as4.Outgoing) { m.Payloads[0].ContentType = "no-slash" }},
		{"Payloads[1].ContentID", func(m *as4.Outgoing) { m.Payloads[1].ContentID = "payload-1@txinbox" }},
		{"Payloads[0].ContentID", func(m *as4.Outgoing) { m.Payloads[0].ContentID = "envelope@txinbox" }},
		{"Payloads[0].ContentID", func(m *as4.Outgoing) { m.Payloads[0].ContentID = "a>\r\nX: y" }},
	}
	for i, tt := range tests {
		m := outgoing()
		tt.change(&m)
		_, err := c.Send(context.Background(), m)
		var oe *as4.OutgoingError
		if !errors.As(err, &oe) || oe.Field != tt.field || !as4.IsPermanent(err) {
			t.Errorf("case %d: error %v, want an *OutgoingError for %s", i, err, tt.field)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached the partner, want 0", n)
	}
}

func TestNewClientValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []struct {
		field string
		cfg   as4.ClientConfig
	}{
		{"URL", as4.ClientConfig{}},
		{"URL", as4.ClientConfig{URL: "ftp://partner/as4"}},
		{"URL", as4.ClientConfig{URL: "http://"}},
		{"URL", as4.ClientConfig{URL: "http://a b/"}},
		{"Timeout", as4.ClientConfig{URL: "http://partner/as4", Timeout: -1}},
		{"MaxResponseBytes", as4.ClientConfig{URL: "https://partner/as4", MaxResponseBytes: -1}},
	} {
		_, err := as4.NewClient(cfg.cfg)
		var ce *txinbox.ConfigError
		if !errors.As(err, &ce) || ce.Field != cfg.field {
			t.Errorf("%+v: error %v, want a ConfigError for %s", cfg.cfg, err, cfg.field)
		}
	}
}

func TestDeriveMessageID(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("billing/InvoiceIssued/42/0"))
	want := hex.EncodeToString(sum[:16]) + "@as4.example.com"
	if got := as4.DeriveMessageID("billing/InvoiceIssued/42/0", "as4.example.com"); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if a, b := as4.DeriveMessageID("s/m/0", "d"), as4.DeriveMessageID("s/m/1", "d"); a == b {
		t.Errorf("two stable ids give one MessageId %q", a)
	}
	if got := as4.DeriveMessageID("x", ""); !regexp.MustCompile(`^[0-9a-f]{32}@txinbox$`).MatchString(got) {
		t.Errorf("default domain: %q", got)
	}
	for domain, ok := range map[string]bool{"as4.example.com": true, "txinbox": true, "": false, "a..b": false, ".a": false, "a.": false, "a b": false, "a@b": false, "é": false} {
		if err := as4.CheckMessageIDDomain(domain); (err == nil) != ok {
			t.Errorf("CheckMessageIDDomain(%q) = %v", domain, err)
		}
	}
}

func ExampleClient_Send() {
	// A partner endpoint that answers every message with a receipt.
	partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/soap+xml")
		io.WriteString(w, signalAnswer(receiptUnit(as4.DeriveMessageID("billing/InvoiceIssued/42/0", "sender.example"))))
	}))
	defer partner.Close()

	client, err := as4.NewClient(as4.ClientConfig{URL: partner.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := client.Send(context.Background(), as4.Outgoing{
		MessageID: as4.DeriveMessageID("billing/InvoiceIssued/42/0", "sender.example"),
		Timestamp: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), // stored with the message: the same on a resend
		From:      ebms.Party{IDs: []ebms.PartyID{{Type: "urn:example:party", ID: "US"}}},
		To:        ebms.Party{IDs: []ebms.PartyID{{Type: "urn:example:party", ID: "PARTNER"}}},
		Service:   ebms.Service{Value: "urn:example:invoicing"},
		Action:    "Submit",
		Payloads:  []as4.Payload{{ContentType: "application/xml", Data: []byte("<Invoice/>")}},
	})
	if as4.IsPermanent(err) {
		fmt.Println("refused:", err) // do not resend
		return
	}
	if err != nil {
		fmt.Println("resend later:", err)
		return
	}
	fmt.Println("receipt", res.ReceiptMessageID, "for", res.MessageID)
	// Output:
	// receipt rcpt@partner for 9b954038771cb5d8e4612ed2000923b4@sender.example
}
