package as4client_test

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
	"github.com/txinbox/txinbox/as4/as4client"
	"github.com/txinbox/txinbox/as4/internal/as4test"
	"github.com/txinbox/txinbox/edi/ebms"
)

func outgoing() as4client.Outgoing { return as4test.Outgoing("msg@test") }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
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
			res, err := as4test.NewClient(t, as4client.Config{URL: srv.URL}).Send(context.Background(), m)
			if tt.want.ok {
				must(t, err)
				if len(res.Warnings) != tt.want.warnings || res.ReceiptMessageID != "rcpt@partner" || !bytes.Contains(res.Receipt, []byte("eb:Receipt")) {
					t.Errorf("result %+v", res)
				}
				return
			}
			se := as4test.SendError(t, err)
			if se.Permanent != tt.want.permanent || as4client.IsPermanent(err) != tt.want.permanent || se.Code != tt.want.code || se.StatusCode != tt.status {
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
	_, err := as4test.NewClient(t, as4client.Config{URL: srv.URL, MaxResponseBytes: 4096}).Send(context.Background(), outgoing())
	se := as4test.SendError(t, err)
	if se.Permanent || !strings.Contains(err.Error(), "larger than 4096 bytes") {
		t.Errorf("got %v", err)
	}
}

func TestSendTransportFailuresAreRetryable(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	_, err := as4test.NewClient(t, as4client.Config{URL: closed.URL}).Send(context.Background(), outgoing())
	if se := as4test.SendError(t, err); se.Permanent || se.StatusCode != 0 || se.Err == nil {
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
	_, err = as4test.NewClient(t, as4client.Config{URL: slow.URL, Timeout: 50 * time.Millisecond}).Send(context.Background(), outgoing())
	if se := as4test.SendError(t, err); se.Permanent || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timeout: %+v", se)
	}
}

func TestOutgoingIsValidatedBeforeSending(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	c := as4test.NewClient(t, as4client.Config{URL: srv.URL})
	tests := []struct {
		field  string
		change func(m *as4client.Outgoing)
	}{
		{"MessageID", func(m *as4client.Outgoing) { m.MessageID = "" }},
		{"MessageID", func(m *as4client.Outgoing) { m.MessageID = "a b@x" }},
		{"MessageID", func(m *as4client.Outgoing) { m.MessageID = "<a@x>" }},
		{"MessageID", func(m *as4client.Outgoing) { m.MessageID = strings.Repeat("a", 256) }},
		{"RefToMessageID", func(m *as4client.Outgoing) { m.RefToMessageID = "x\ny" }},
		{"Timestamp", func(m *as4client.Outgoing) { m.Timestamp = time.Time{} }},
		{"Service.Value", func(m *as4client.Outgoing) { m.Service.Value = "" }},
		{"Action", func(m *as4client.Outgoing) { m.Action = " " }},
		{"Action", func(m *as4client.Outgoing) { m.Action = "a\x00b" }},
		{"Action", func(m *as4client.Outgoing) { m.Action = "Submit " }},
		{"From.IDs", func(m *as4client.Outgoing) { m.From.IDs = nil }},
		{"To.IDs[0].ID", func(m *as4client.Outgoing) { m.To.IDs[0].ID = "" }},
		{"From.IDs[0].Type", func(m *as4client.Outgoing) { m.From.IDs[0].Type = "\xff" }},
		{"Properties[0].Value", func(m *as4client.Outgoing) { m.Properties = []as4.Property{{Name: "n", Value: "\x01"}} }},
		{"Payloads[0].ContentType", func(m *as4client.Outgoing) { m.Payloads[0].ContentType = "text/plain\r\nX-Injected: 1" }},
		{"Payloads[0].ContentType", func(m *as4client.Outgoing) { m.Payloads[0].ContentType = "no-slash" }},
		{"Payloads[1].ContentID", func(m *as4client.Outgoing) { m.Payloads[1].ContentID = "payload-1@txinbox" }},
		{"Payloads[0].ContentID", func(m *as4client.Outgoing) { m.Payloads[0].ContentID = "envelope@txinbox" }},
		{"Payloads[0].ContentID", func(m *as4client.Outgoing) { m.Payloads[0].ContentID = "a>\r\nX: y" }},
	}
	for i, tt := range tests {
		m := outgoing()
		tt.change(&m)
		_, err := c.Send(context.Background(), m)
		var oe *as4client.OutgoingError
		if !errors.As(err, &oe) || oe.Field != tt.field || !as4client.IsPermanent(err) {
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
		cfg   as4client.Config
	}{
		{"URL", as4client.Config{}},
		{"URL", as4client.Config{URL: "ftp://partner/as4"}},
		{"URL", as4client.Config{URL: "http://"}},
		{"URL", as4client.Config{URL: "http://a b/"}},
		{"Timeout", as4client.Config{URL: "http://partner/as4", Timeout: -1}},
		{"MaxResponseBytes", as4client.Config{URL: "https://partner/as4", MaxResponseBytes: -1}},
	} {
		_, err := as4client.New(cfg.cfg)
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
	if got := as4client.DeriveMessageID("billing/InvoiceIssued/42/0", "as4.example.com"); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if a, b := as4client.DeriveMessageID("s/m/0", "d"), as4client.DeriveMessageID("s/m/1", "d"); a == b {
		t.Errorf("two stable ids give one MessageId %q", a)
	}
	if got := as4client.DeriveMessageID("x", ""); !regexp.MustCompile(`^[0-9a-f]{32}@txinbox$`).MatchString(got) {
		t.Errorf("default domain: %q", got)
	}
	for domain, ok := range map[string]bool{"as4.example.com": true, "txinbox": true, "": false, "a..b": false, ".a": false, "a.": false, "a b": false, "a@b": false, "é": false} {
		if err := as4client.CheckMessageIDDomain(domain); (err == nil) != ok {
			t.Errorf("CheckMessageIDDomain(%q) = %v", domain, err)
		}
	}
}

func ExampleClient_Send() {
	// A partner endpoint that answers every message with a receipt.
	partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/soap+xml")
		io.WriteString(w, signalAnswer(receiptUnit(as4client.DeriveMessageID("billing/InvoiceIssued/42/0", "sender.example"))))
	}))
	defer partner.Close()

	client, err := as4client.New(as4client.Config{URL: partner.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := client.Send(context.Background(), as4client.Outgoing{
		MessageID: as4client.DeriveMessageID("billing/InvoiceIssued/42/0", "sender.example"),
		Timestamp: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), // stored with the message: the same on a resend
		From:      ebms.Party{IDs: []ebms.PartyID{{Type: "urn:example:party", ID: "US"}}},
		To:        ebms.Party{IDs: []ebms.PartyID{{Type: "urn:example:party", ID: "PARTNER"}}},
		Service:   ebms.Service{Value: "urn:example:invoicing"},
		Action:    "Submit",
		Payloads:  []as4client.Payload{{ContentType: "application/xml", Data: []byte("<Invoice/>")}},
	})
	if as4client.IsPermanent(err) {
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
