package as4_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4"
)

// wantRefused checks an EBMS error answer that names the message in error
// and that nothing was stored.
func wantRefused(t *testing.T, e *endpoint, r response, status int, code as4.ErrorCode, id string) {
	t.Helper()
	wantError(t, r, status, code)
	if id != "" && !strings.Contains(string(r.body), `refToMessageInError="`+id+`"`) {
		t.Errorf("the error does not carry refToMessageInError=%q:\n%s", id, r.body)
	}
	if n := e.count(t, "SELECT count(*) FROM txinbox_inbox"); n != 0 {
		t.Errorf("%d inbox rows after a refused message, want 0", n)
	}
}

// TestHostileEnvelopes: a DOCTYPE, nesting beyond the depth limit and more
// elements than the limit are refused with EBMS:0009 before parsing.
func TestHostileEnvelopes(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{})
	m := userMessage{id: newID(), from: "sender"}
	env := m.envelope()
	cases := map[string]string{
		"doctype":         strings.Replace(env, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>", `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa">]>`, 1),
		"doctype-no-decl": `<!DOCTYPE S12:Envelope SYSTEM "http://example.test/x.dtd">` + strings.SplitN(env, "\n", 2)[1],
		"deep":            strings.Replace(env, "<S12:Body/>", "<S12:Body>"+strings.Repeat("<a>", 100000)+strings.Repeat("</a>", 100000)+"</S12:Body>", 1),
		"deep-header":     strings.Replace(env, "<eb:Messaging", strings.Repeat("<x:a xmlns:x=\"urn:x\">", 100)+strings.Repeat("</x:a>", 100)+"<eb:Messaging", 1),
		"many-partinfo":   strings.Replace(env, "</eb:CollaborationInfo>", "</eb:CollaborationInfo><eb:PayloadInfo>"+strings.Repeat(`<eb:PartInfo href="cid:x"/>`, 60000)+"</eb:PayloadInfo>", 1),
		"many-attributes": strings.Replace(env, "<S12:Body/>", "<S12:Body><a "+manyAttrs(100001)+"/></S12:Body>", 1),
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			r := post(t, e.url, "application/soap+xml", []byte(body))
			wantRefused(t, e, r, http.StatusBadRequest, as4.InvalidHeader, m.id)
		})
	}
}

func manyAttrs(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "a%d=\"\" ", i)
	}
	return b.String()
}

// TestRequiredHeaderElements: every element the ebMS header schema
// requires in eb:UserMessage is checked; the error names the message.
func TestRequiredHeaderElements(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{})
	m := userMessage{id: newID(), from: "sender"}
	env := m.envelope()
	cut := func(old, new string) string {
		if !strings.Contains(env, old) {
			t.Fatalf("%q not in the envelope", old)
		}
		return strings.Replace(env, old, new, 1)
	}
	cases := map[string]string{
		"no To":            cut(`<eb:To><eb:PartyId type="urn:test">receiver</eb:PartyId><eb:Role>http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/responder</eb:Role></eb:To>`, ""),
		"no To PartyId":    cut(`<eb:PartyId type="urn:test">receiver</eb:PartyId>`, ""),
		"empty To PartyId": cut(`<eb:PartyId type="urn:test">receiver</eb:PartyId>`, `<eb:PartyId type="urn:test"> </eb:PartyId>`),
		"no From Role":     cut(`<eb:Role>http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/initiator</eb:Role>`, ""),
		"no Collaboration": cut(`<eb:CollaborationInfo><eb:Service>urn:test:service</eb:Service><eb:Action>Submit</eb:Action><eb:ConversationId>c1</eb:ConversationId></eb:CollaborationInfo>`, ""),
		"no Service":       cut(`<eb:Service>urn:test:service</eb:Service>`, ""),
		"two Services":     cut(`<eb:Service>urn:test:service</eb:Service>`, `<eb:Service>a</eb:Service><eb:Service>b</eb:Service>`),
		"no Action":        cut(`<eb:Action>Submit</eb:Action>`, ""),
		"no Conversation":  cut(`<eb:ConversationId>c1</eb:ConversationId>`, ""),
		"empty From":       cut(`<eb:PartyId type="urn:test">sender</eb:PartyId>`, `<eb:PartyId type="urn:test"></eb:PartyId>`),
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			wantRefused(t, e, post(t, e.url, "application/soap+xml", []byte(body)), http.StatusBadRequest, as4.InvalidHeader, m.id)
		})
	}
}

// TestConcurrentRequestLimit: beyond MaxConcurrentRequests a request is
// answered 503 with Retry-After at once; the one in flight completes.
func TestConcurrentRequestLimit(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{maxConcurrent: 1})
	m := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("<a/>")}}
	body, ct := m.mime(false)
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.CloseWithError(io.ErrUnexpectedEOF) }) // a failed test must not leave the request open
	done := make(chan response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, e.url, pr)
		req.Header.Set("Content-Type", ct)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- response{status: -1, body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- response{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: b}
	}()
	// The first half of the body is written and the handler holds the
	// only slot while it reads the rest (the write returning says only
	// that the client took the bytes: wait for the server's side).
	_, err := pw.Write(body[:len(body)/2])
	must(t, err)
	for deadline := time.Now().Add(10 * time.Second); e.inFlight() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first request never took its slot")
		}
	}
	other := userMessage{id: newID(), from: "sender"}
	r := post(t, e.url, "application/soap+xml", []byte(other.envelope()))
	wantError(t, r, http.StatusServiceUnavailable, as4.Other)
	if r.retryAfter == "" {
		t.Error("503 without Retry-After")
	}
	_, err = pw.Write(body[len(body)/2:])
	must(t, err)
	must(t, pw.Close())
	first := <-done
	validateAnswer(t, first)
	wantReceipt(t, first, m.id)
	wantReceipt(t, post(t, e.url, ct, body), m.id)
}
