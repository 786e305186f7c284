package phase4_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

const agreementsYAML = `agreements:
  - name: phase4
    from: {id: phase4, type: "urn:oasis:names:tc:ebcore:partyid-type:unregistered"}
    to:   {id: txinbox, type: "urn:oasis:names:tc:ebcore:partyid-type:unregistered"}
    agreement_ref: "urn:as4:agreement"
    services:
      - {service: "urn:txinbox:interop:invoicing", service_type: "urn:txinbox:interop", action: Submit}
    receipt: nrr
    require_signature: true
    require_encryption: true
    require_compression: true
`

// TestPhase4SendsToServe: phase4's client sends signed, encrypted,
// gzip-compressed user messages under the eDelivery AS4 P-Mode to the
// txinbox binary's endpoint, and phase4 itself judges each answer: a
// receipt whose signature it verifies and whose non-repudiation
// information it matches with what it signed. The message whose first
// answer the network loses is resent by phase4's own retry and gets the
// original receipt; a message resent with the same MessageId by a new
// phase4 run gets the original receipt; a message changed on the way is
// refused and phase4 sees the ebMS error. Each accepted MessageId has one
// effect row, with the payload phase4 sent.
func TestPhase4SendsToServe(t *testing.T) {
	cp := partnerClasspath(t)
	dir := t.TempDir()
	k := writeKeys(t, dir)
	dbFile := filepath.Join(dir, "inbox.db")
	db, err := sql.Open("sqlite", dbFile)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE effects (message_id TEXT NOT NULL, body BLOB)`); err != nil {
		t.Fatal(err)
	}
	agreements := filepath.Join(dir, "agreements.yaml")
	if err := os.WriteFile(agreements, []byte(agreementsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, "--db", dbFile, "--no-purge",
		"--as4-key", k.txinboxKey, "--as4-cert", k.txinboxCert, "--as4-trust", k.ca,
		"--as4-agreements", agreements,
		"--effect", "sql", "--effect-sql", "INSERT INTO effects (message_id, body) VALUES ($3, $9)")
	px := newProxy(srv.url)
	front := httptest.NewServer(px)
	defer front.Close()

	payload := func(name string) string {
		f := filepath.Join(dir, name+".xml")
		if err := os.WriteFile(f, []byte("<Invoice><ID>"+name+"</ID><Note>"+strings.Repeat("phase4 ", 200)+"</Note></Invoice>"), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	base := []string{"url=" + front.URL, "key=" + k.phase4Key, "cert=" + k.phase4Cert,
		"trust=" + k.ca, "peer=" + k.txinboxCert}
	run := func(id string, extra ...string) verdict {
		opts := append(append([]string{}, base...), "payload="+payload(strings.Split(id, "@")[0]),
			"conversation=conv-"+id)
		return send(t, cp, append(opts, append(extra, "id="+id)...)...)
	}
	accepted := func(v verdict, id string) {
		t.Helper()
		if v.Result != "SUCCESS" || !v.Receipt || v.NRR != "success" || v.RefTo != id || len(v.Errors) != 0 {
			t.Errorf("phase4 did not accept txinbox's answer to %s: %+v\nserve:\n%s", id, v, srv.Log())
		}
	}

	// 1. One message, answered at once.
	accepted(run("plain-1@phase4"), "plain-1@phase4")

	// ... and in SOAP 1.1, answered in SOAP 1.1.
	accepted(run("soap11-1@phase4", "soap=1.1"), "soap11-1@phase4")
	if a := px.answers("soap11-1@phase4"); len(a) != 1 || !strings.Contains(a[0], "http://schemas.xmlsoap.org/soap/envelope/") {
		t.Errorf("the SOAP 1.1 message was not answered in SOAP 1.1: %q", a)
	}

	// 2. The network loses serve's first answer: phase4 resends on its
	// own, and the receipt it gets is the one serve made the first time.
	px.dropFirst("retry-1@phase4")
	v := run("retry-1@phase4", "retries=2")
	accepted(v, "retry-1@phase4")
	if v.Retries != 1 || px.requests("retry-1@phase4") != 2 {
		t.Errorf("phase4 retried %d times, %d requests passed; want 1 and 2", v.Retries, px.requests("retry-1@phase4"))
	}
	if a := px.answers("retry-1@phase4"); len(a) != 2 || a[0] != a[1] || !strings.Contains(a[0], v.SignalID) {
		t.Errorf("the retry did not get the original receipt %s, byte for byte: %d answers", v.SignalID, len(a))
	}

	// 3. The same MessageId sent again by a new phase4 run (same
	// Timestamp, payload and Content-ID, so the same message): the
	// original receipt. Its non-repudiation information is that of the
	// first transmission, whose signature phase4 built with other
	// wsu:Ids, so phase4's reference check cannot match it (reported,
	// not a failure of the receipt).
	same := []string{"timestamp=2026-12-01T10:00:00Z", "content-id=invoice-resend@phase4"}
	first := run("resend-1@phase4", same...)
	accepted(first, "resend-1@phase4")
	again := run("resend-1@phase4", same...)
	if again.Result != "SUCCESS" || !again.Receipt || again.SignalID != first.SignalID {
		t.Errorf("a resend with the same MessageId did not get the original receipt %s: %+v", first.SignalID, again)
	}

	// 4. Changed on the way (a signed header value): refused, and phase4
	// sees the ebMS error.
	const tamperedID = "tamper-1@phase4"
	px.changeRequests(tamperedID, "conv-tamper-1@phase4", "conv-tamper-X@phase4")
	bad := run(tamperedID)
	if bad.Result != "AS4_ERROR_MESSAGE_RECEIVED" || fmt.Sprint(bad.Errors) != "[EBMS:0101]" {
		t.Errorf("a tampered message: phase4 saw %+v, want AS4_ERROR_MESSAGE_RECEIVED with EBMS:0101", bad)
	}

	// 5. The receipt changed on its way back (a signed value in its
	// eb:Messaging): phase4's own check of txinbox's signature refuses it,
	// so a receipt it accepts above is one it verified.
	px.changeAnswers("forged-1@phase4", "forged-1@phase4</", "forged-X@phase4</")
	if forged := run("forged-1@phase4"); forged.Result == "SUCCESS" || forged.Receipt {
		t.Errorf("phase4 accepted a receipt changed after txinbox signed it: %+v", forged)
	}

	srv.stop(t)
	effects := map[string][][]byte{}
	rows, err := db.Query(`SELECT message_id, body FROM effects`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var body []byte
		if err := rows.Scan(&id, &body); err != nil {
			t.Fatal(err)
		}
		effects[id] = append(effects[id], body)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"plain-1@phase4", "retry-1@phase4", "resend-1@phase4", "forged-1@phase4", "soap11-1@phase4"} {
		want, err := os.ReadFile(payload(strings.Split(id, "@")[0]))
		if err != nil {
			t.Fatal(err)
		}
		if len(effects[id]) != 1 || !bytes.Equal(effects[id][0], want) {
			t.Errorf("%s: %d effects (want 1, with the payload phase4 sent)", id, len(effects[id]))
		}
	}
	if len(effects[tamperedID]) != 0 || len(effects) != 5 {
		t.Errorf("effects for %d MessageIds, want 5 (not the tampered one): %v", len(effects), keysOf(effects))
	}
}

func keysOf(m map[string][][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
