package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox/internal/cli/clitest"
	"github.com/txinbox/txinbox/internal/kafkatest"
	"github.com/txinbox/txinbox/internal/testdb"
)

// TestWalkthrough runs README.md's walkthrough against an in-process Kafka
// cluster (kfake) and a fresh schema of the test PostgreSQL: INV-1 (ACME)
// is processed, INV-2 (GLOBEX, unknown) is dead-lettered; status, dlq list
// and inspect show it; after the customer is created and the dead letter
// replayed, INV-2's next delivery is processed: one invoices row each.
func TestWalkthrough(t *testing.T) {
	url, pool := postgres(t)
	cluster, adm := kafkaCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out strings.Builder // written by run only, read after done
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-db", url, "-brokers", strings.Join(cluster.ListenAddrs(), ",")}, &out)
	}()
	produce(t, cluster, "INV-1", `{"customer":"ACME","amount":"12.50"}`)
	produce(t, cluster, "INV-2", `{"customer":"GLOBEX","amount":"99.00"}`)
	kafkatest.AwaitOffset(t, adm, "billing", "invoices", 0, 2, done)

	id := findDeadLetter(t, url)
	if _, err := pool.Exec(context.Background(), `INSERT INTO customers VALUES ('GLOBEX')`); err != nil {
		t.Fatal(err)
	}
	replayed := cli(t, "dlq", "replay", id, "--db", url, "--reason", "customer GLOBEX created")
	if !strings.Contains(replayed, `the next delivery of "INV-2" (scope "billing") will be processed`) {
		t.Errorf("dlq replay printed %q, want the next delivery of INV-2 announced", replayed)
	}
	produce(t, cluster, "INV-2", `{"customer":"GLOBEX","amount":"99.00"}`)
	kafkatest.AwaitOffset(t, adm, "billing", "invoices", 0, 3, done)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if got := invoices(t, pool); strings.Join(got, ",") != "INV-1 ACME 12.50,INV-2 GLOBEX 99.00" {
		t.Errorf("invoices %q, want INV-1 and INV-2 once each", got)
	}
	if s := cli(t, "status", "--db", url); !regexp.MustCompile(`dead letters \(not dropped\)\s+0\n`).MatchString(s) {
		t.Errorf("status after the replay:\n%s\nwant no dead letter", s)
	}
	if got := inspectState(t, url); got.State != "processed" {
		t.Errorf("inspect after the replay: state %q, want processed", got.State)
	}
	if want := "processed 2, duplicates 0, dead-lettered 1"; !strings.Contains(out.String(), want) {
		t.Errorf("the program printed %q, want %q", out.String(), want)
	}
}

// findDeadLetter runs the walkthrough's status, dlq list and inspect, checks
// that each shows INV-2 dead-lettered for its unknown customer, and returns
// the dead letter's ID from the dlq list.
func findDeadLetter(t *testing.T, url string) string {
	t.Helper()
	status := cli(t, "status", "--db", url)
	if !regexp.MustCompile(`dead letters \(not dropped\)\s+1\n`).MatchString(status) {
		t.Errorf("status:\n%s\nwant one dead letter", status)
	}
	var id string
	for _, line := range strings.Split(cli(t, "dlq", "list", "--db", url), "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[2] == "billing" && f[3] == "INV-2" &&
			strings.HasSuffix(line, `unknown customer "GLOBEX"`) {
			id = f[0]
		}
	}
	if id == "" {
		t.Fatalf("dlq list shows no dead letter of INV-2 with its error")
	}
	got := inspectState(t, url)
	if got.State != "dead-lettered" || got.DeadLetter.Payload != `{"customer":"GLOBEX","amount":"99.00"}` ||
		!strings.Contains(got.DeadLetter.LastError, `unknown customer "GLOBEX"`) {
		t.Errorf("inspect INV-2: %+v, want it dead-lettered with its payload and error", got)
	}
	return id
}

// inspection is what the walkthrough reads of txinbox inspect's JSON.
type inspection struct {
	State      string `json:"state"`
	DeadLetter struct {
		Payload   string `json:"payload"`
		LastError string `json:"last_error"`
	} `json:"dead_letter"`
}

// inspectState runs txinbox inspect for INV-2.
func inspectState(t *testing.T, url string) inspection {
	t.Helper()
	var got inspection
	if err := json.Unmarshal([]byte(cli(t, "inspect", "--db", url, "--scope", "billing", "INV-2")), &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// cli runs a txinbox command in-process, as the binary would, and
// returns its stdout; it fails the test unless the command exits 0.
func cli(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, code := clitest.Run(t, args...)
	if code != 0 {
		t.Fatalf("txinbox %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

// postgres is a fresh schema of the test database: the URL the program
// and the commands are given (with that schema as search_path), and a pool
// on it for the test's own statements.
func postgres(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	schema := testdb.NewSchema(t, testdb.Require(t))
	sep := "?"
	if strings.Contains(testdb.URL(), "?") {
		sep = "&"
	}
	return testdb.URL() + sep + "search_path=" + schema, testdb.PoolIn(t, schema, 2)
}

// invoices returns the invoices rows, "message_id customer amount" each.
func invoices(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT message_id || ' ' || customer || ' ' || amount FROM invoices ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var row string
		if err := rows.Scan(&row); err != nil {
			t.Fatal(err)
		}
		got = append(got, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// kafkaCluster starts an in-process Kafka cluster (kfake) with the topic
// invoices, and a client on it.
func kafkaCluster(t *testing.T) (*kfake.Cluster, *kadm.Client) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "invoices"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cluster, kadm.NewClient(cl)
}

// produce sends one record to invoices, as the walkthrough's kcat does.
func produce(t *testing.T, cluster *kfake.Cluster, id, payload string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	r := &kgo.Record{Topic: "invoices", Value: []byte(payload), Headers: []kgo.RecordHeader{{Key: "message-id", Value: []byte(id)}}}
	if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
		t.Fatal(err)
	}
}
