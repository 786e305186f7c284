package as4_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/as4"
)

// agreementsYAML is the example of docs/as4.md.
const agreementsYAML = `agreements:
  - name: partner-a
    from: {id: sender, type: "urn:test"}
    to: {id: receiver, type: "urn:test"}
    services:
      - {service: "urn:test:service", action: Submit}
  - name: partner-b-domibus
    from: {id: domibus, type: "urn:test"}
    to: {id: receiver, type: "urn:test"}
    receipt: plain
    require_compression: true
    duplicates_across_senders: true
  - name: partner-c-domibus
    from: {id: domibus2, type: "urn:test"}
    to: {id: receiver, type: "urn:test"}
    duplicates_across_senders: true
  - name: partner-d-signed
    from: {id: signer, type: "urn:test"}
    to: {id: receiver, type: "urn:test"}
    require_signature: true
`

func loadTestAgreements(t *testing.T) []as4.Agreement {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agreements.yaml")
	must(t, os.WriteFile(p, []byte(agreementsYAML), 0o600))
	as, err := as4.LoadAgreements(p)
	must(t, err)
	if len(as) != 4 || as[1].Receipt != as4.ReceiptPlain || !as[1].DuplicatesAcrossSenders || as[0].Services[0].Action != "Submit" {
		t.Fatalf("agreements read as %+v", as)
	}
	return as
}

func TestAgreements(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{agreements: loadTestAgreements(t), security: securedEndpoint(t, false)})
	stored := func() int { return e.count(t, "SELECT count(*) FROM txinbox_inbox") }

	ok := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("<a/>")}}
	body, ct := ok.mime(false)
	wantReceipt(t, post(t, e.url, ct, body), ok.id)
	if rec := e.delivered.Load(); rec == nil || rec.Agreement != "partner-a" {
		t.Errorf("delivered under agreement %+v", rec)
	}

	for name, m := range map[string]userMessage{
		"unknown sender":  {id: newID(), from: "stranger"},
		"wrong action":    {id: newID(), from: "sender", security: "", partProperties: ""},
		"not compressed":  {id: newID(), from: "domibus", payloads: [][]byte{[]byte("<a/>")}},
		"wrong recipient": {id: newID(), from: "sender"},
	} {
		t.Run(name, func(t *testing.T) {
			before := stored()
			env := m.envelope()
			switch name {
			case "wrong action":
				env = strings.Replace(env, "<eb:Action>Submit</eb:Action>", "<eb:Action>Cancel</eb:Action>", 1)
			case "wrong recipient":
				env = strings.Replace(env, ">receiver<", ">someone-else<", 1)
			}
			var r response
			if len(m.payloads) > 0 {
				body, ct := m.mime(false)
				r = post(t, e.url, ct, body)
			} else {
				r = post(t, e.url, "application/soap+xml", []byte(env))
			}
			wantError(t, r, http.StatusBadRequest, as4.ProcessingModeMismatch)
			if !strings.Contains(string(r.body), `refToMessageInError="`+m.id+`"`) {
				t.Errorf("no refToMessageInError:\n%s", r.body)
			}
			if stored() != before {
				t.Error("a message outside its agreement was stored")
			}
		})
	}

	t.Run("signature required", func(t *testing.T) {
		m := userMessage{id: newID(), from: "signer"}
		wantError(t, post(t, e.url, "application/soap+xml", []byte(m.envelope())), http.StatusBadRequest, as4.PolicyNoncompliance)
		// A ds:Signature that does not verify is no signature.
		m.security = signedHeader
		m.payloads = [][]byte{[]byte("<a/>")}
		body, ct := m.mime(false)
		if r := post(t, e.url, ct, body); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "EBMS:010") {
			t.Fatalf("unverifiable signature: %d\n%s", r.status, r.body)
		}
		m.security = ""
		body, ct, _ = signedMIME(t, m)
		r := post(t, e.url, ct, body)
		wantReceipt(t, r, m.id)
		if !strings.Contains(string(r.body), "NonRepudiationInformation") {
			t.Errorf("no NRR receipt:\n%s", r.body)
		}
	})

	t.Run("plain receipt and duplicates across senders", func(t *testing.T) {
		id := newID()
		m := userMessage{id: id, from: "domibus", payloads: [][]byte{gzipped("<a/>")}, partProperties: gzipProps}
		body, ct, _ := signedMIME(t, m)
		r := post(t, e.url, ct, body)
		wantReceipt(t, r, id)
		if strings.Contains(string(r.body), "NonRepudiationInformation") || !strings.Contains(string(r.body), "OriginalUserMessage") {
			t.Errorf("receipt: plain wanted:\n%s", r.body)
		}
		// The same MessageId from the other Domibus partner: EBMS:0003.
		other := userMessage{id: id, from: "domibus2", payloads: [][]byte{gzipped("<a/>")}, partProperties: gzipProps}
		body, ct = other.mime(false)
		wantError(t, post(t, e.url, ct, body), http.StatusBadRequest, as4.ValueInconsistent)
		// Under the default (per sender), the same MessageId is another message.
		third := userMessage{id: id, from: "sender", payloads: [][]byte{[]byte("<a/>")}}
		body, ct = third.mime(false)
		wantReceipt(t, post(t, e.url, ct, body), id)
	})
}

func TestLoadAgreementsErrors(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"no name":      "- {from: {id: a}, to: {id: b}}",
		"no from":      "- {name: x, to: {id: b}}",
		"no to":        "- {name: x, from: {id: a}}",
		"bad receipt":  "- {name: x, from: {id: a}, to: {id: b}, receipt: signed}",
		"not yaml":     "- [",
		"empty action": "- {name: x, from: {id: a}, to: {id: b}, services: [{action: y}]}",
	} {
		p := filepath.Join(t.TempDir(), "a.yaml")
		must(t, os.WriteFile(p, []byte(doc), 0o600))
		if _, err := as4.LoadAgreements(p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
