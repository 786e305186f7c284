package serve_test

import (
	"strings"
	"syscall"
	"testing"

	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// TestServeBinaryMariaDBSIGKILLRestart is TestServeBinarySIGKILLRestart on
// MySQL or MariaDB (--db mysql://): serve over NATS with an --effect sql
// in txinbox's $N form, SIGKILLed in the middle of the stream and started
// again; in the end every message has exactly one effect and everything
// is acked. Then the outbox effect on the same database, and the admin
// commands read the inbox.
func TestServeBinaryMariaDBSIGKILLRestart(t *testing.T) {
	t.Parallel()
	url := mysqltest.NewDatabase(t)
	db := mysqltest.Open(t, url, 4)
	if _, err := db.Exec(`CREATE TABLE effects (scope VARCHAR(200) NOT NULL, id VARCHAR(200) NOT NULL, source TEXT NOT NULL,
		payload BLOB NOT NULL, detail TEXT NOT NULL) ENGINE=InnoDB`); err != nil {
		t.Fatal(err)
	}
	counts := func() (rows, distinct int) {
		t.Helper()
		if err := db.QueryRow(`SELECT count(*), count(DISTINCT id) FROM effects`).Scan(&rows, &distinct); err != nil {
			t.Fatal(err)
		}
		return rows, distinct
	}
	natsURL, js := startNATS(t)
	const orders, resent = 800, 100
	publishOrders(t, js, orders, resent)
	args := []string{"--db", url, "--no-purge", "--nats-url", natsURL, "--nats-stream", "ORDERS",
		"--nats-consumer", "restart", "--nats-key", "header:message-id", "--nats-ack-wait", "1s", "--effect", "sql",
		// $N named out of order and twice: bound by occurrence.
		"--effect-sql", "INSERT INTO effects (scope, id, source, payload, detail) VALUES ($1, $2, $4, $9, concat_ws(' ', $3, $5, $6, $7, $8, $2))",
		"--effect-sql", "DO SLEEP(0.005)"}
	p := startServeBin(t, nil, args...)
	waitFor(t, "the first effects", func() bool { rows, _ := counts(); return rows >= 100 })
	if code, _ := p.signal(syscall.SIGKILL); code != -1 {
		t.Fatalf("SIGKILL: exit %d", code)
	}
	killedAt, _ := counts()
	p = startServeBin(t, nil, args...)
	waitFor(t, "every message after the restart", func() bool {
		_, distinct := counts()
		pending, ackPending := consumerPending(t, js, "restart")
		return distinct == orders && pending == 0 && ackPending == 0
	})
	if code, _ := p.signal(syscall.SIGTERM); code != 0 {
		t.Errorf("SIGTERM after the restart: exit %d:\n%s", code, p.stderr)
	}
	if rows, distinct := counts(); rows != orders || distinct != orders {
		t.Errorf("after a SIGKILL at %d effects and a restart: %d rows, %d ids; want %d of each", killedAt, rows, distinct, orders)
	}
	d, err := mysqlstore.New(db, mysqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var inbox int
	if err := db.QueryRow(`SELECT count(*) FROM ` + d.Tables().Inbox).Scan(&inbox); err != nil || inbox != orders {
		t.Errorf("inbox rows %d, %v; want %d", inbox, err, orders)
	}
	out, errs, code := runBinEnv(t, nil, "status", "--db", url)
	if code != 0 || !strings.Contains(out, "800") || !strings.Contains(out, "mysql") {
		t.Errorf("status: exit %d\n%s%s", code, out, errs)
	}
}
