package as4_test

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/edi/ebms"
)

func TestNewMessageGetsReceipt(t *testing.T) {
	backends(t, options{}, func(t *testing.T, e *endpoint) {
		m := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("<a>1</a>"), []byte("<b>2</b>")}}
		body, ct := m.mime(false)
		r := post(t, e.url, ct, body)
		wantReceipt(t, r, m.id)
		if !strings.HasPrefix(r.contentType, "application/soap+xml") {
			t.Errorf("Content-Type %q", r.contentType)
		}
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages WHERE message_id = $1 AND receipt = $2", m.id, r.body); n != 1 {
			t.Errorf("%d message rows with the answered receipt, want 1", n)
		}
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_payloads WHERE (part_index = 0 AND data = $1) OR (part_index = 1 AND data = $2)",
			m.payloads[0], m.payloads[1]); n != 2 {
			t.Errorf("%d payload rows match, want 2", n)
		}
		if n := e.deliveries.Load(); n != 1 {
			t.Errorf("%d deliveries, want 1", n)
		}
	})
}

func TestDuplicateReplaysOriginalReceipt(t *testing.T) {
	backends(t, options{}, func(t *testing.T, e *endpoint) {
		m := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("<a/>"), []byte("<b/>")}}
		body, ct := m.mime(false)
		first := post(t, e.url, ct, body)
		wantReceipt(t, first, m.id)
		// A resend with another boundary and part order is the same message.
		body2, ct2 := m.mime(true)
		second := post(t, e.url, ct2, body2)
		if second.status != http.StatusOK || !bytes.Equal(first.body, second.body) || first.contentType != second.contentType {
			t.Fatalf("duplicate answered %d, not the original receipt:\n%s\nwant:\n%s", second.status, second.body, first.body)
		}
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 1 {
			t.Errorf("%d stored messages, want 1", n)
		}
		if n := e.deliveries.Load(); n != 1 {
			t.Errorf("%d deliveries, want 1", n)
		}
	})
}

func TestDriftIsRefused(t *testing.T) {
	backends(t, options{}, func(t *testing.T, e *endpoint) {
		m := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("<a>original</a>")}}
		body, ct := m.mime(false)
		wantReceipt(t, post(t, e.url, ct, body), m.id)
		m.payloads[0] = []byte("<a>changed</a>")
		body, ct = m.mime(false)
		r := post(t, e.url, ct, body)
		wantError(t, r, http.StatusBadRequest, as4.ValueInconsistent)
		if n := e.count(t, "SELECT count(*) FROM txinbox_drift"); n != 1 {
			t.Errorf("%d drift rows, want 1", n)
		}
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_payloads WHERE data = $1", []byte("<a>original</a>")); n != 1 {
			t.Errorf("the original payload is not kept")
		}
		if n := e.deliveries.Load(); n != 1 {
			t.Errorf("%d deliveries, want 1", n)
		}
	})
}

func TestSameMessageIDFromAnotherPartyIsAnotherMessage(t *testing.T) {
	backends(t, options{}, func(t *testing.T, e *endpoint) {
		id := newID()
		for _, from := range []string{"party-a", "party-b"} {
			body, ct := userMessage{id: id, from: from, payloads: [][]byte{[]byte("<x/>")}}.mime(false)
			wantReceipt(t, post(t, e.url, ct, body), id)
		}
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages WHERE message_id = $1", id); n != 2 {
			t.Errorf("%d stored messages, want 2", n)
		}
	})
}

func TestConcurrentDuplicates(t *testing.T) {
	backends(t, options{}, func(t *testing.T, e *endpoint) {
		for range 5 {
			m := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("<c/>")}}
			body, ct := m.mime(false)
			var wg sync.WaitGroup
			start := make(chan struct{})
			answers := make([]response, 2)
			for i := range answers {
				wg.Go(func() {
					<-start
					answers[i] = post(t, e.url, ct, body)
				})
			}
			close(start)
			wg.Wait()
			wantReceipt(t, answers[0], m.id)
			if !bytes.Equal(answers[0].body, answers[1].body) {
				t.Fatalf("concurrent copies got different answers:\n%s\n%s", answers[0].body, answers[1].body)
			}
		}
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 5 {
			t.Errorf("%d stored messages, want 5", n)
		}
		if n := e.deliveries.Load(); n != 5 {
			t.Errorf("%d deliveries, want 5", n)
		}
	})
}

func TestFailedDeliveryLetsTheRetryThrough(t *testing.T) {
	backends(t, options{failFirstDelivery: true}, func(t *testing.T, e *endpoint) {
		m := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("<r/>")}}
		body, ct := m.mime(false)
		r := post(t, e.url, ct, body)
		wantError(t, r, http.StatusServiceUnavailable, as4.Other)
		if r.retryAfter == "" {
			t.Error("no Retry-After header")
		}
		if n := e.count(t, "SELECT count(*) FROM txinbox_inbox"); n != 0 {
			t.Fatalf("%d inbox rows after a failed attempt, want 0", n)
		}
		wantReceipt(t, post(t, e.url, ct, body), m.id)
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 1 {
			t.Errorf("%d stored messages, want 1", n)
		}
		if n := e.deliveries.Load(); n != 1 {
			t.Errorf("%d deliveries, want 1", n)
		}
	})
}

// TestStoreFailureLetsTheRetryThrough makes PostgreSQL refuse the first
// insert into the AS4 table: a sequence is not rolled back, so the
// trigger raises exactly once.
func TestStoreFailureLetsTheRetryThrough(t *testing.T) {
	t.Parallel()
	e := newPG(t, options{})
	e.exec(t, `CREATE SEQUENCE fail_once`)
	e.exec(t, `CREATE FUNCTION fail_once() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF nextval('fail_once') = 1 THEN RAISE EXCEPTION 'injected store failure'; END IF; RETURN NEW; END $$`)
	e.exec(t, `CREATE TRIGGER fail_once BEFORE INSERT ON txinbox_as4_messages FOR EACH ROW EXECUTE FUNCTION fail_once()`)
	m := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("<s/>")}}
	body, ct := m.mime(false)
	r := post(t, e.url, ct, body)
	wantError(t, r, http.StatusServiceUnavailable, as4.Other)
	if strings.Contains(string(r.body), "eb:Receipt") {
		t.Error("a receipt was sent for a failed attempt")
	}
	wantReceipt(t, post(t, e.url, ct, body), m.id)
	if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 1 {
		t.Errorf("%d stored messages, want 1", n)
	}
	if n := e.deliveries.Load(); n != 1 {
		t.Errorf("%d deliveries, want 1", n)
	}
}

const wsseMustUnderstand = `<wsse:Security xmlns:wsse="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd" S12:mustUnderstand="true"><wsse:BinarySecurityToken>AAAA</wsse:BinarySecurityToken></wsse:Security>`

func TestSecurityMustUnderstandRefusedByDefault(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{})
	body, ct := userMessage{id: newID(), from: "sender", security: wsseMustUnderstand}.mime(false)
	r := post(t, e.url, ct, body)
	wantError(t, r, http.StatusInternalServerError, as4.PolicyNoncompliance)
	for _, want := range []string{"S12:MustUnderstand", "S12:NotUnderstood"} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("answer lacks %s:\n%s", want, r.body)
		}
	}
	if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 0 {
		t.Errorf("%d stored messages, want 0", n)
	}
}

func TestSecurityMustUnderstandAcceptedWhenConfigured(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{acceptUnverified: true})
	m := userMessage{id: newID(), from: "sender", security: wsseMustUnderstand}
	body, ct := m.mime(false)
	wantReceipt(t, post(t, e.url, ct, body), m.id)
}

func TestOtherMustUnderstandHeaderRefused(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{acceptUnverified: true})
	m := userMessage{id: newID(), from: "sender", security: `<x:Custom xmlns:x="urn:x" S12:mustUnderstand="1"/>`}
	body, ct := m.mime(false)
	wantError(t, post(t, e.url, ct, body), http.StatusInternalServerError, as4.InvalidHeader)
}

func TestOversizedRequest(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{maxBody: 4096})
	big := userMessage{id: newID(), from: "sender", payloads: [][]byte{bytes.Repeat([]byte("x"), 8192)}}
	body, ct := big.mime(false)
	wantError(t, post(t, e.url, ct, body), http.StatusRequestEntityTooLarge, as4.Other)
	// Without a Content-Length the limit is found while reading.
	req, err := http.NewRequest(http.MethodPost, e.url, struct{ *bytes.Reader }{bytes.NewReader(body)})
	must(t, err)
	req.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || req.ContentLength != 0 {
		t.Errorf("chunked: status %d (Content-Length %d), want 413", resp.StatusCode, req.ContentLength)
	}
	// The endpoint keeps serving.
	small := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("<s/>")}}
	body, ct = small.mime(false)
	wantReceipt(t, post(t, e.url, ct, body), small.id)
}

func TestMethodNotAllowed(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{})
	resp, err := http.Get(e.url)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET: %d Allow=%q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

func TestDeadLetteredMessage(t *testing.T) {
	backends(t, options{failFirstDelivery: true, maxAttempts: 1}, func(t *testing.T, e *endpoint) {
		body, ct := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("<d/>")}}.mime(false)
		for range 2 { // the first attempt dead-letters; the retry finds the dead letter
			wantError(t, post(t, e.url, ct, body), http.StatusInternalServerError, as4.Other)
		}
		if n := e.count(t, "SELECT count(*) FROM txinbox_dead_letters"); n != 1 {
			t.Errorf("%d dead letters, want 1", n)
		}
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 0 {
			t.Errorf("%d stored messages, want 0", n)
		}
	})
}

// TestDatabaseErrorAnswers503: a transaction that cannot commit is a 503
// without a receipt, and the retry after the repair is processed.
func TestDatabaseErrorAnswers503(t *testing.T) {
	t.Parallel()
	e := newPG(t, options{})
	m := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("<db/>")}}
	body, ct := m.mime(false)
	e.exec(t, "ALTER TABLE txinbox_inbox RENAME TO txinbox_inbox_away")
	wantError(t, post(t, e.url, ct, body), http.StatusServiceUnavailable, as4.Other)
	e.exec(t, "ALTER TABLE txinbox_inbox_away RENAME TO txinbox_inbox")
	wantReceipt(t, post(t, e.url, ct, body), m.id)
	if n := e.deliveries.Load(); n != 1 {
		t.Errorf("%d deliveries, want 1", n)
	}
}

// TestResendAfterInboxPurge: once the inbox row is purged, a resend is a
// new message again; its AS4 rows replace the old ones instead of failing
// on their key.
func TestResendAfterInboxPurge(t *testing.T) {
	backends(t, options{}, func(t *testing.T, e *endpoint) {
		m := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("<p/>")}}
		body, ct := m.mime(false)
		first := post(t, e.url, ct, body)
		wantReceipt(t, first, m.id)
		e.exec(t, "DELETE FROM txinbox_inbox")
		second := post(t, e.url, ct, body)
		wantReceipt(t, second, m.id)
		if bytes.Equal(first.body, second.body) {
			t.Error("a message processed anew got the old receipt")
		}
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages WHERE receipt = $1", second.body); n != 1 {
			t.Errorf("%d rows with the new receipt, want 1", n)
		}
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_payloads"); n != 1 {
			t.Errorf("%d payload rows, want 1", n)
		}
	})
}

// TestResendInOtherSOAPVersion: a message first sent as SOAP 1.1 and
// resent as SOAP 1.2 is a duplicate, answered with the original receipt
// (same MessageId) in SOAP 1.2; the 1.1 resend still gets the stored bytes.
func TestResendInOtherSOAPVersion(t *testing.T) {
	backends(t, options{}, func(t *testing.T, e *endpoint) {
		m := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("<a/>")}, soap11: true}
		body, ct := m.mime(false)
		first := post(t, e.url, ct, body)
		sig1 := wantReceipt(t, first, m.id)
		if !strings.HasPrefix(first.contentType, "text/xml") || !bytes.Contains(first.body, []byte(ebms.NamespaceSOAP11)) {
			t.Fatalf("SOAP 1.1 request answered as %s:\n%s", first.contentType, first.body)
		}
		m.soap11 = false
		body12, ct12 := m.mime(false)
		second := post(t, e.url, ct12, body12)
		sig2 := wantReceipt(t, second, m.id)
		if !strings.HasPrefix(second.contentType, "application/soap+xml") || !bytes.Contains(second.body, []byte(ebms.NamespaceSOAP12)) || bytes.Contains(second.body, []byte(ebms.NamespaceSOAP11)) {
			t.Fatalf("SOAP 1.2 resend answered as %s:\n%s", second.contentType, second.body)
		}
		if sig2.MessageID != sig1.MessageID {
			t.Errorf("the 1.2 answer is receipt %q, the original %q", sig2.MessageID, sig1.MessageID)
		}
		m.soap11 = true
		body11, ct11 := m.mime(true)
		if third := post(t, e.url, ct11, body11); !bytes.Equal(third.body, first.body) {
			t.Errorf("the SOAP 1.1 resend did not get the stored receipt:\n%s", third.body)
		}
		if n := e.deliveries.Load(); n != 1 {
			t.Errorf("%d deliveries, want 1", n)
		}
	})
}

// signedHeader is a wsse:Security header (not mustUnderstand) with a
// signature of two references, as a signing sender writes it.
const signedHeader = `<wsse:Security xmlns:wsse="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"><ds:Signature xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:SignedInfo>` +
	`<ds:CanonicalizationMethod Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"/><ds:SignatureMethod Algorithm="http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"/>` +
	`<ds:Reference URI="#_messaging"><ds:Transforms><ds:Transform Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"><ec:InclusiveNamespaces xmlns:ec="http://www.w3.org/2001/10/xml-exc-c14n#" PrefixList="S12"/></ds:Transform></ds:Transforms><ds:DigestMethod Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"/><ds:DigestValue>bWVzc2FnaW5n</ds:DigestValue></ds:Reference>` +
	`<ds:Reference URI="cid:part0@test"><ds:Transforms><ds:Transform Algorithm="http://docs.oasis-open.org/wss/oasis-wss-SwAProfile-1.1#Attachment-Content-Signature-Transform"/></ds:Transforms><ds:DigestMethod Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"/><ds:DigestValue>cGFydDA=</ds:DigestValue></ds:Reference>` +
	`</ds:SignedInfo><ds:SignatureValue>c2ln</ds:SignatureValue></ds:Signature></wsse:Security>`

// TestSignedMessageGetsNonRepudiationReceipt: the receipt of a signed
// message holds its signature's references (and is schema-valid: post
// validates every answer); an unsigned one's holds the UserMessage copy.
func TestSignedMessageGetsNonRepudiationReceipt(t *testing.T) {
	backends(t, options{}, func(t *testing.T, e *endpoint) {
		m := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("<a/>")}, security: signedHeader}
		body, ct := m.mime(false)
		r := post(t, e.url, ct, body)
		wantReceipt(t, r, m.id)
		for _, want := range []string{"<ebbp:NonRepudiationInformation", `<ds:Reference URI="#_messaging">`, "<ds:DigestValue>bWVzc2FnaW5n</ds:DigestValue>",
			`<ds:Reference URI="cid:part0@test">`, "<ds:DigestValue>cGFydDA=</ds:DigestValue>", `PrefixList="S12"`} {
			if !strings.Contains(string(r.body), want) {
				t.Errorf("receipt lacks %s:\n%s", want, r.body)
			}
		}
		if strings.Contains(string(r.body), "UserMessage") {
			t.Errorf("an NRR receipt holds a UserMessage copy:\n%s", r.body)
		}
		u := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("<a/>")}}
		body, ct = u.mime(false)
		r = post(t, e.url, ct, body)
		wantReceipt(t, r, u.id)
		if !strings.Contains(string(r.body), "OriginalUserMessage") || strings.Contains(string(r.body), "NonRepudiationInformation") {
			t.Errorf("unsigned message's receipt:\n%s", r.body)
		}
	})
}
