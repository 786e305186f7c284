package serve_test

import (
	"bytes"
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4/as4client"
	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/internal/mysqltest"
)

// TestServeAS4OnMySQL: the in-process serve answers an AS4 message and
// its duplicate with the same receipt on MySQL or MariaDB.
func TestServeAS4OnMySQL(t *testing.T) {
	t.Parallel()
	testServe(t, "--db", mysqltest.NewDatabase(t))
}

// TestServeBinaryAS4OnMariaDB: the binary serves --as4-listen on --db
// mysql:// with an --effect sql. A real AS4 message (as4client, with two
// MIME payloads), sent twice, gets one effect and two identical receipts;
// after a SIGKILL and a restart its resend gets the same receipt again and
// still makes no second effect; the console lists it; purge deletes it
// with its payloads.
func TestServeBinaryAS4OnMariaDB(t *testing.T) {
	t.Parallel()
	url := mysqltest.NewDatabase(t)
	db := mysqltest.Open(t, url, 2)
	if _, err := db.Exec(`CREATE TABLE received (scope VARBINARY(1024) NOT NULL, msgid TEXT NOT NULL, sender TEXT NOT NULL,
		action TEXT NOT NULL) ENGINE=InnoDB`); err != nil {
		t.Fatal(err)
	}
	effects := func() int {
		t.Helper()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM received WHERE scope = 'as4' AND msgid = 'mariadb-1@test' AND sender = 'séller' AND action = 'Invoice'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	args := []string{"--db", url, "--no-purge", "--as4-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--effect", "sql",
		"--effect-sql", "INSERT INTO received (scope, msgid, sender, action) VALUES ($1, $3, $4, $7)"}
	m := as4client.Outgoing{MessageID: "mariadb-1@test", Timestamp: time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC),
		From: ebms.Party{IDs: []ebms.PartyID{{ID: "séller", Type: "urn:test"}}}, To: ebms.Party{IDs: []ebms.PartyID{{ID: "buyer", Type: "urn:test"}}},
		Service: ebms.Service{Value: "urn:test:invoicing"}, Action: "Invoice",
		Payloads: []as4client.Payload{{ContentType: "application/xml", Data: []byte("<Invoice>😀</Invoice>")},
			{ContentType: "application/octet-stream", Data: bytes.Repeat([]byte{0, 0xff}, 40000)}}}
	send := func(p *serveProc) []byte {
		t.Helper()
		c, err := as4client.New(as4client.Config{URL: p.as4URL})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Send(context.Background(), m)
		if err != nil {
			t.Fatalf("send: %v\n%s", err, p.stderr)
		}
		return res.Receipt
	}
	p := startServeBin(t, nil, args...)
	first := send(p)
	if again := send(p); !bytes.Equal(first, again) {
		t.Errorf("the duplicate got another receipt:\n%s\nwant:\n%s", again, first)
	}
	if n := effects(); n != 1 {
		t.Fatalf("%d effects after a message and its duplicate, want 1", n)
	}
	if code, _ := p.signal(syscall.SIGKILL); code != -1 {
		t.Fatalf("SIGKILL: exit %d", code)
	}
	p = startServeBin(t, nil, args...)
	if again := send(p); !bytes.Equal(first, again) {
		t.Errorf("the resend after a SIGKILL got another receipt:\n%s\nwant:\n%s", again, first)
	}
	// The console (on --http-listen) lists the message with its receipt.
	if code, page := p.get("/ui/as4"); code != 200 || !strings.Contains(page, "mariadb-1@test") || !strings.Contains(page, "séller") {
		t.Errorf("GET /ui/as4 = %d, without the message:\n%s", code, page)
	}
	if code, _ := p.signal(syscall.SIGTERM); code != 0 {
		t.Errorf("SIGTERM: exit %d:\n%s", code, p.stderr)
	}
	if n := effects(); n != 1 {
		t.Errorf("%d effects after the restart's resend, want 1", n)
	}
	var msgs, parts int
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM txinbox_as4_messages), (SELECT count(*) FROM txinbox_as4_payloads)`).Scan(&msgs, &parts); err != nil || msgs != 1 || parts != 2 {
		t.Errorf("AS4 tables hold %d messages, %d payloads (%v); want 1 and 2", msgs, parts, err)
	}
	// purge takes the AS4 message (made 40 days old) with its payloads.
	if _, err := db.Exec(`UPDATE txinbox_as4_messages SET received_at = received_at - INTERVAL 40 DAY`); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runBinEnv(t, nil, "purge", "--db", url, "--older-than", "30d")
	if code != 0 || !strings.Contains(out, "1 AS4 messages") {
		t.Errorf("purge: exit %d, not 1 AS4 message:\n%s%s", code, out, errs)
	}
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM txinbox_as4_messages), (SELECT count(*) FROM txinbox_as4_payloads)`).Scan(&msgs, &parts); err != nil || msgs+parts != 0 {
		t.Errorf("after purge: %d messages, %d payloads (%v); want none", msgs, parts, err)
	}
}
