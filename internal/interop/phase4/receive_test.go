package phase4_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4client"
	"github.com/txinbox/txinbox/as4/wssec"
	"github.com/txinbox/txinbox/as4/wssec/wssectest"
	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/outbox"
	as4target "github.com/txinbox/txinbox/outbox/target/as4"
)

// received is a line Phase4Partner receive prints for each user message
// phase4 accepted.
type received struct {
	Received, Conversation string
	Signed, Decrypted      bool
	Payloads               []string // SHA-256, hex, of each payload as phase4 delivered it
}

// phase4Receiver runs phase4's receiving side and returns its URL and the
// messages it accepts.
func phase4Receiver(t *testing.T, cp string, k keys) (string, <-chan received) {
	t.Helper()
	cmd := exec.Command("java", "-cp", cp, "txinbox.interop.Phase4Partner", "receive",
		"key="+k.phase4Key, "cert="+k.phase4Cert, "trust="+k.ca)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }() //nolint:errcheck // ended by the test
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill() //nolint:errcheck // it did not stop on its own
			<-done
		}
		if t.Failed() || testing.Verbose() {
			t.Logf("phase4 receiver log:\n%s", stderr.String())
		}
	})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, stdout) //nolint:errcheck // draining
	}()
	var url string
	select {
	case l, ok := <-lines:
		var hello struct{ Listening string }
		if !ok || json.Unmarshal([]byte(l), &hello) != nil || hello.Listening == "" {
			t.Fatalf("phase4 receiver did not start (%q):\n%s", l, stderr.String())
		}
		url = hello.Listening
	case <-time.After(time.Minute):
		t.Fatalf("phase4 receiver not listening within a minute:\n%s", stderr.String())
	}
	out := make(chan received, 16)
	go func() {
		defer close(out)
		for l := range lines {
			var r received
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Errorf("phase4 receiver printed %q: %v", l, err)
				continue
			}
			out <- r
		}
	}()
	return url, out
}

// TestOutboxSendsToPhase4: txinbox's AS4 client, as the outbox's AS4
// target, sends signed and encrypted messages to phase4's receiving
// handler; phase4 decrypts, verifies and accepts them, and txinbox
// verifies phase4's signed non-repudiation receipt against what it signed.
// A receipt changed on its way back is not taken as proof of delivery.
func TestOutboxSendsToPhase4(t *testing.T) {
	cp := partnerClasspath(t)
	k := writeKeys(t, t.TempDir())
	url, got := phase4Receiver(t, cp, k)
	px := newProxy(url)
	front := httptest.NewServer(px)
	defer front.Close()

	p := wssectest.Get(t)
	signer, err := wssec.NewSigner(p.ReceiverKey, p.Receiver)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := wssec.NewEncrypter(p.Leaf)
	if err != nil {
		t.Fatal(err)
	}
	ver, err := wssec.NewVerifier(wssec.VerifyConfig{Roots: p.Roots()})
	if err != nil {
		t.Fatal(err)
	}
	unregistered := "urn:oasis:names:tc:ebcore:partyid-type:unregistered"
	target, err := as4target.New(as4target.Config{MessageIDDomain: "txinbox.test",
		Partners: map[string]as4target.Partner{"phase4": {
			URL:     front.URL,
			From:    ebms.Party{IDs: []ebms.PartyID{{Type: unregistered, ID: "txinbox"}}},
			To:      ebms.Party{IDs: []ebms.PartyID{{Type: unregistered, ID: "phase4"}}},
			Service: "urn:txinbox:interop:invoicing", ServiceType: "urn:txinbox:interop", Action: "Submit",
			AgreementRef: as4.AgreementRef{Value: "urn:as4:agreement"},
			Security:     as4client.Security{Signer: signer, Encrypter: enc, ReceiptVerifier: ver},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	row := func(id string) *outbox.Message {
		return &outbox.Message{ID: 1, Scope: "billing", MessageID: id, Topic: "phase4", ContentType: "application/xml",
			Payload: []byte("<Invoice><ID>" + id + "</ID></Invoice>"), CreatedAt: time.Now().UTC().Truncate(time.Millisecond), Attempt: 1}
	}
	ctx := context.Background()

	m := row("InvoiceIssued/1")
	receipt, err := target.Send(ctx, m)
	if err != nil {
		t.Fatalf("phase4 did not take txinbox's message: %v", err)
	}
	msgID := as4client.DeriveMessageID(m.StableID(), "txinbox.test")
	if !strings.Contains(string(receipt), msgID) || !strings.Contains(string(receipt), "NonRepudiationInformation") {
		t.Errorf("the receipt is not phase4's NRR receipt for %s:\n%s", msgID, receipt)
	}
	select {
	case r := <-got:
		sum := sha256.Sum256(m.Payload)
		if r.Received != msgID || !r.Signed || !r.Decrypted || len(r.Payloads) != 1 || r.Payloads[0] != hex.EncodeToString(sum[:]) {
			t.Errorf("phase4 received %+v, want %s signed, decrypted, with the row's payload", r, msgID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("phase4 reported no message")
	}

	// A receipt changed after phase4 signed it proves nothing: the relay
	// must keep the row and try again.
	forged := row("InvoiceIssued/2")
	forgedID := as4client.DeriveMessageID(forged.StableID(), "txinbox.test")
	px.changeAnswers(forgedID, ">"+forgedID+"</", ">X"+forgedID[1:]+"</")
	if _, err := target.Send(ctx, forged); err == nil || outbox.IsPermanent(err) {
		t.Errorf("a forged receipt: %v, want a retryable error", err)
	}
	select {
	case r := <-got:
		if r.Received != forgedID {
			t.Errorf("phase4 delivered %s, want %s (only its receipt was forged)", r.Received, forgedID)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("phase4 reported no delivery of %s", forgedID)
	}

	// The receipt is lost on its way back: the relay resends the same
	// message (same MessageId, Timestamp, payload). phase4 already has it
	// and answers with its signed duplicate notice (EBMS:0004, "already
	// handled"), not the receipt: txinbox takes that, verified, as
	// delivered (before, the row was failed for good although phase4 had
	// delivered it). phase4 delivered it once.
	lost := row("InvoiceIssued/3")
	lostID := as4client.DeriveMessageID(lost.StableID(), "txinbox.test")
	px.dropFirst(lostID)
	if _, err := target.Send(ctx, lost); err == nil || outbox.IsPermanent(err) {
		t.Errorf("a lost receipt: %v, want a retryable error", err)
	}
	lost.Attempt = 2
	notice, err := target.Send(ctx, lost)
	if err != nil || !strings.Contains(string(notice), "already handled (this is a duplicate)") {
		t.Errorf("resend after a lost receipt: %v, want delivered on phase4's duplicate notice:\n%s", err, notice)
	}
	var deliveries []string
	for len(deliveries) < 2 {
		select {
		case r := <-got:
			deliveries = append(deliveries, r.Received)
			continue
		case <-time.After(3 * time.Second):
		}
		break
	}
	if len(deliveries) != 1 || deliveries[0] != lostID {
		t.Errorf("phase4 delivered %v, want %s once", deliveries, lostID)
	}

	// The duplicate notice changed on its way back proves nothing either.
	faked := row("InvoiceIssued/4")
	fakedID := as4client.DeriveMessageID(faked.StableID(), "txinbox.test")
	px.dropFirst(fakedID)
	px.changeAnswers(fakedID, "undefined error occurred.", "undefined error occurred!")
	target.Send(ctx, faked) //nolint:errcheck // the first answer is lost
	faked.Attempt = 2
	if _, err := target.Send(ctx, faked); err == nil || outbox.IsPermanent(err) || !strings.Contains(err.Error(), "does not prove delivery") {
		t.Errorf("a forged duplicate notice: %v, want a retryable error", err)
	}
}
