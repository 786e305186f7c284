package as4target_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4client"
	"github.com/txinbox/txinbox/as4/as4sqlite"
	"github.com/txinbox/txinbox/as4/wssec"
	"github.com/txinbox/txinbox/as4/wssec/wssectest"
	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/outbox"
	as4target "github.com/txinbox/txinbox/outbox/target/as4"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// partnerEndpoint is txinbox's AS4 endpoint on SQLite behind HTTP: the
// partner's MSH.
type partnerEndpoint struct {
	url        string
	db         *sql.DB
	deliveries atomic.Int64
	failNext   atomic.Bool // makes the next Deliver fail
}

func newPartner(t *testing.T) *partnerEndpoint { return newPartnerWith(t, as4.SecurityConfig{}) }

// newPartnerWith starts a partner endpoint with WS-Security.
func newPartnerWith(t *testing.T, sec as4.SecurityConfig) *partnerEndpoint {
	t.Helper()
	ctx := context.Background()
	driver, err := sqlitestore.Open(filepath.Join(t.TempDir(), "partner.db"), sqlitestore.Options{})
	must(t, err)
	must(t, driver.Migrate(ctx))
	st, err := as4sqlite.New(driver.DB(), as4sqlite.Options{})
	must(t, err)
	must(t, st.Migrate(ctx))
	p := &partnerEndpoint{db: driver.DB()}
	quiet := slog.New(slog.DiscardHandler)
	h, err := as4.New(driver, as4.Config[*sql.Tx]{Store: st, Logger: quiet, Inbox: txinbox.Config[*sql.Tx]{Logger: quiet}, Security: sec,
		Deliver: func(ctx context.Context, tx *sql.Tx, m *as4.Received) error {
			if p.failNext.CompareAndSwap(true, false) {
				return errors.New("injected delivery failure")
			}
			p.deliveries.Add(1)
			return nil
		}})
	must(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close(); driver.Close() })
	p.url = srv.URL
	return p
}

func (p *partnerEndpoint) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	must(t, p.db.QueryRow(q, args...).Scan(&n))
	return n
}

func acme(url string) as4target.Partner {
	return as4target.Partner{
		URL:          url,
		From:         ebms.Party{IDs: []ebms.PartyID{{Type: "urn:test:party", ID: "billing"}}},
		To:           ebms.Party{IDs: []ebms.PartyID{{Type: "urn:test:party", ID: "acme"}}},
		Service:      "urn:test:invoicing",
		ServiceType:  "urn:test:service-type",
		Action:       "Submit",
		AgreementRef: as4.AgreementRef{Value: "urn:test:agreement"},
	}
}

func newTarget(t *testing.T, partners map[string]as4target.Partner) *as4target.Target {
	t.Helper()
	tg, err := as4target.New(as4target.Config{Partners: partners, MessageIDDomain: "billing.test"})
	must(t, err)
	return tg
}

func row(part int, payload string) *outbox.Message {
	return &outbox.Message{
		ID: 7, Scope: "billing", MessageID: "InvoiceIssued/42", Part: part, Topic: "acme",
		ContentType: "application/xml", Payload: []byte(payload), Attempt: 1,
		CreatedAt: time.Date(2026, 11, 30, 10, 0, 0, 123456000, time.UTC),
	}
}

// The same row sent twice (a crash after the send, before it was marked
// sent) is one message at the partner, under one MessageId, with one receipt.
func TestSameRowTwiceIsOneMessageAtThePartner(t *testing.T) {
	t.Parallel()
	p := newPartner(t)
	tg := newTarget(t, map[string]as4target.Partner{"acme": acme(p.url + "/as4")})
	ctx := context.Background()
	m := row(0, "<Invoice><ID>42</ID></Invoice>")
	first, err := tg.Send(ctx, m)
	must(t, err)
	again := row(0, "<Invoice><ID>42</ID></Invoice>")
	again.Attempt = 2
	second, err := tg.Send(ctx, again)
	must(t, err)
	if len(first) == 0 || !bytes.Equal(first, second) {
		t.Errorf("the resend got another receipt:\n%s\nwant:\n%s", second, first)
	}
	id := as4client.DeriveMessageID("billing/InvoiceIssued/42/0", "billing.test")
	if n := p.count(t, `SELECT count(*) FROM txinbox_as4_messages WHERE message_id = ? AND from_party = 'billing' AND to_party = 'acme'
		AND service = 'urn:test:invoicing' AND service_type = 'urn:test:service-type' AND action = 'Submit'
		AND conversation_id = 'InvoiceIssued/42' AND sent_at = '2026-11-30T10:00:00.123Z' AND receipt = ?`, id, []byte(first)); n != 1 {
		t.Errorf("%d messages stored under %s with the receipt returned, want 1", n, id)
	}
	if n := p.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 1 {
		t.Errorf("%d messages at the partner, want 1", n)
	}
	if n := p.count(t, "SELECT count(*) FROM txinbox_as4_payloads WHERE data = ? AND content_type = 'application/xml'", m.Payload); n != 1 {
		t.Errorf("%d payload rows, want 1", n)
	}
	if n := p.deliveries.Load(); n != 1 {
		t.Errorf("%d deliveries at the partner, want 1", n)
	}

	// Another part of the same inbox message is another AS4 message.
	_, err = tg.Send(ctx, row(1, "<Invoice><ID>42</ID><Copy/></Invoice>"))
	must(t, err)
	if n := p.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 2 {
		t.Errorf("%d messages at the partner, want 2", n)
	}
}

// TestSecuredPartner: with security on both ends the row arrives signed
// and encrypted, is stored decrypted, and the partner's signed receipt is
// verified; the resend gets the same receipt.
func TestSecuredPartner(t *testing.T) {
	t.Parallel()
	pki := wssectest.Get(t)
	dec, err := wssec.NewDecrypter(pki.ReceiverKey, pki.Receiver)
	must(t, err)
	in, err := wssec.NewVerifier(wssec.VerifyConfig{Roots: pki.Roots(), Decrypter: dec})
	must(t, err)
	receiptSigner, err := wssec.NewSigner(pki.ReceiverKey, pki.Receiver)
	must(t, err)
	p := newPartnerWith(t, as4.SecurityConfig{Verifier: in, Signer: receiptSigner, RequireSignature: true})

	signer, err := wssec.NewSigner(pki.LeafKey, pki.Leaf)
	must(t, err)
	enc, err := wssec.NewEncrypter(pki.Receiver)
	must(t, err)
	receipts, err := wssec.NewVerifier(wssec.VerifyConfig{Roots: pki.Roots()})
	must(t, err)
	partner := acme(p.url)
	partner.Security = as4client.Security{Signer: signer, Encrypter: enc, ReceiptVerifier: receipts}
	tg := newTarget(t, map[string]as4target.Partner{"acme": partner})
	m := row(0, "<Invoice><ID>43</ID></Invoice>")
	first, err := tg.Send(context.Background(), m)
	must(t, err)
	second, err := tg.Send(context.Background(), row(0, "<Invoice><ID>43</ID></Invoice>"))
	must(t, err)
	if !bytes.Equal(first, second) || !bytes.Contains(first, []byte("NonRepudiationInformation")) {
		t.Errorf("receipts:\n%s\n%s", first, second)
	}
	if n := p.count(t, "SELECT count(*) FROM txinbox_as4_payloads WHERE data = ? AND content_type = 'application/xml'", m.Payload); n != 1 {
		t.Errorf("%d plaintext payload rows, want 1", n)
	}
}

func TestConversationIDHeader(t *testing.T) {
	t.Parallel()
	p := newPartner(t)
	tg := newTarget(t, map[string]as4target.Partner{"acme": acme(p.url)})
	m := row(0, "<x/>")
	m.Headers = []outbox.Header{{Key: as4target.HeaderConversationID, Value: "order-9"}}
	_, err := tg.Send(context.Background(), m)
	must(t, err)
	if n := p.count(t, "SELECT count(*) FROM txinbox_as4_messages WHERE conversation_id = 'order-9'"); n != 1 {
		t.Errorf("%d messages in conversation order-9, want 1", n)
	}
}

func TestPermanentFailures(t *testing.T) {
	t.Parallel()
	p := newPartner(t)
	tg := newTarget(t, map[string]as4target.Partner{"acme": acme(p.url)})
	ctx := context.Background()

	_, err := tg.Send(ctx, &outbox.Message{ID: 3, Scope: "s", MessageID: "m", Topic: "globex", CreatedAt: time.Now()})
	if !outbox.IsPermanent(err) || !strings.Contains(err.Error(), `"globex"`) {
		t.Errorf("unknown partner: %v", err)
	}

	// The same row id with another payload: the partner refuses it (drift).
	_, err = tg.Send(ctx, row(0, "<original/>"))
	must(t, err)
	_, err = tg.Send(ctx, row(0, "<changed/>"))
	var se *as4client.SendError
	if !outbox.IsPermanent(err) || !errors.As(err, &se) || se.Code != as4.ValueInconsistent || !strings.Contains(err.Error(), "EBMS:0003") {
		t.Errorf("drift: %v", err)
	}

	noTime := row(2, "<x/>")
	noTime.CreatedAt = time.Time{}
	if _, err := tg.Send(ctx, noTime); !outbox.IsPermanent(err) || !strings.Contains(err.Error(), "CreatedAt") {
		t.Errorf("no CreatedAt: %v", err)
	}
	badType := row(3, "<x/>")
	badType.ContentType = "text/plain\r\nX-Injected: 1"
	if _, err := tg.Send(ctx, badType); !outbox.IsPermanent(err) || !strings.Contains(err.Error(), "ContentType") {
		t.Errorf("bad content type: %v", err)
	}
	if n := p.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 1 {
		t.Errorf("%d messages at the partner, want 1", n)
	}
}

func TestRetryableFailures(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "maintenance", http.StatusBadGateway)
	}))
	defer down.Close()
	tg := newTarget(t, map[string]as4target.Partner{"acme": acme(down.URL)})
	_, err := tg.Send(context.Background(), row(0, "<x/>"))
	if err == nil || outbox.IsPermanent(err) || !strings.Contains(err.Error(), "HTTP 502") {
		t.Errorf("502: %v", err)
	}

	// txinbox's endpoint when its Deliver fails: 503, EBMS:0004, Retry-After.
	p := newPartner(t)
	p.failNext.Store(true)
	tg = newTarget(t, map[string]as4target.Partner{"acme": acme(p.url)})
	_, err = tg.Send(context.Background(), row(0, "<x/>"))
	var ra *outbox.RetryAfterError
	if err == nil || outbox.IsPermanent(err) || !errors.As(err, &ra) || ra.After <= 0 || !strings.Contains(err.Error(), "EBMS:0004") {
		t.Errorf("503: %v", err)
	}
	_, err = tg.Send(context.Background(), row(0, "<x/>"))
	must(t, err)
	if n := p.deliveries.Load(); n != 1 {
		t.Errorf("%d deliveries, want 1", n)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	with := func(change func(p *as4target.Partner)) map[string]as4target.Partner {
		p := acme("https://partner.test/as4")
		change(&p)
		return map[string]as4target.Partner{"acme": p}
	}
	for _, tt := range []struct {
		field string
		cfg   as4target.Config
	}{
		{"Partners", as4target.Config{}},
		{"MessageIDDomain", as4target.Config{Partners: with(func(*as4target.Partner) {}), MessageIDDomain: "a b"}},
		{`Partners["acme"].URL`, as4target.Config{Partners: with(func(p *as4target.Partner) { p.URL = "ftp://x" })}},
		{`Partners["acme"].URL`, as4target.Config{Partners: with(func(p *as4target.Partner) { p.URL = "" })}},
		{`Partners["acme"].Service`, as4target.Config{Partners: with(func(p *as4target.Partner) { p.Service = "" })}},
		{`Partners["acme"].Action`, as4target.Config{Partners: with(func(p *as4target.Partner) { p.Action = "" })}},
		{`Partners["acme"].From`, as4target.Config{Partners: with(func(p *as4target.Partner) { p.From.IDs = nil })}},
		{`Partners["acme"].To`, as4target.Config{Partners: with(func(p *as4target.Partner) { p.To.IDs[0].ID = "" })}},
		{"Timeout", as4target.Config{Partners: with(func(*as4target.Partner) {}), Timeout: -time.Second}},
	} {
		_, err := as4target.New(tt.cfg)
		var ce *txinbox.ConfigError
		if !errors.As(err, &ce) || !strings.HasPrefix(ce.Field, tt.field) {
			t.Errorf("%s: error %v", tt.field, err)
		}
	}
	if _, err := as4target.New(as4target.Config{Partners: with(func(*as4target.Partner) {})}); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func ExampleNew() {
	t, err := as4target.New(as4target.Config{
		MessageIDDomain: "billing.example.com",
		Partners: map[string]as4target.Partner{
			"acme": {
				URL:     "https://as4.acme.example/as4",
				From:    ebms.Party{IDs: []ebms.PartyID{{Type: "urn:example:party", ID: "billing"}}},
				To:      ebms.Party{IDs: []ebms.PartyID{{Type: "urn:example:party", ID: "acme"}}},
				Service: "urn:example:invoicing",
				Action:  "Submit",
			},
		},
	})
	fmt.Println(t != nil, err)
	// Output: true <nil>
}
