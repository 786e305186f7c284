package serve_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// TestIngressBinaryOnMariaDB: the txinbox binary's serve on MariaDB (or
// the MySQL of TXINBOX_MYSQL_URL) with the webhook ingress; curl posts the
// same Idempotency-Key twice: one effect (one outbox row), and the second
// answer is the first's, replayed from the reply stored in the inbox row
// (store.ReplyKeeper), which the store lists (store.ReplyLister); status
// shows the durability MariaDB's settings give.
func TestIngressBinaryOnMariaDB(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl on PATH")
	}
	t.Parallel()
	url := mysqltest.NewDatabase(t)
	ingress := freeAddr(t)
	p := startServeBin(t, nil, "--db", url, "--no-purge", "--http-listen", "127.0.0.1:0", "--effect", "outbox",
		"--ingress-listen", ingress, "--ingress", "name=orders,key=idempotency-key")
	post := func() (string, string) {
		t.Helper()
		out, err := exec.Command(curl, "-sS", "-D", "-", "-X", "POST", "-H", `Idempotency-Key: "order-1"`,
			"-H", "Content-Type: application/json", "--data-binary", `{"book":1}`, "http://"+ingress+"/ingest/orders").Output()
		if err != nil {
			t.Fatalf("curl: %v\n%s", err, p.stderr)
		}
		head, body, _ := strings.Cut(string(out), "\r\n\r\n")
		return head, body
	}
	head1, body1 := post()
	head2, body2 := post()
	if !strings.HasPrefix(head1, "HTTP/1.1 200") || strings.Contains(head1, "Idempotent-Replayed") {
		t.Errorf("first delivery: %s\n%s", head1, body1)
	}
	if !strings.HasPrefix(head2, "HTTP/1.1 200") || !strings.Contains(head2, "Idempotent-Replayed: true") || body2 != body1 {
		t.Errorf("second delivery: %s\n%s; want the replay of %q", head2, body2, body1)
	}
	db := mysqltest.Open(t, url, 2)
	d, err := mysqlstore.New(db, mysqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var outbox, replies int
	if err := db.QueryRow(`SELECT count(*) FROM ` + d.Tables().Outbox).Scan(&outbox); err != nil || outbox != 1 {
		t.Errorf("outbox rows %d (%v), want 1: one effect for two deliveries", outbox, err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM ` + d.Tables().Inbox + ` WHERE reply IS NOT NULL`).Scan(&replies); err != nil || replies != 1 {
		t.Errorf("inbox rows with a reply: %d (%v), want 1", replies, err)
	}
	// The stored answer, as the console reads it.
	recs, err := d.ListReplies(context.Background(), "ingest:", 10)
	if err != nil || len(recs) != 1 || !strings.Contains(recs[0].MessageID, "order-1") || len(recs[0].Reply) == 0 {
		t.Errorf("ListReplies(ingest:) = %+v, %v; want the key order-1 with its answer", recs, err)
	}
	out, errs, code := runBinEnv(t, nil, "status", "--db", url)
	if code != 0 || !strings.Contains(out, "no setting loses acknowledged messages") {
		t.Errorf("status: exit %d\n%s%s", code, out, errs)
	}
}
