package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox/internal/kafkatest"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// TestMain runs main instead of the tests when runMainEnv is set, so that
// a test can run the program as a process of its own (the exit status).
func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const runMainEnv = "SQLEFFECT_TEST_RUN_MAIN"

// perMessage is a statement run for each new record, with the parameters
// of effect.Params: $2 the inbox key, $4 the source, $9 the payload.
const perMessage = "INSERT INTO invoices (message_id, source, body) VALUES ($2, $4, $9)"

// inboxDB is an inbox database the program is pointed at, with an
// invoices table for the effect.
type inboxDB struct {
	url string
	// invoices returns the invoices rows, "message_id source body" each.
	invoices func(t *testing.T) []string
}

// sqliteDB is a SQLite file with the invoices table.
func sqliteDB(t *testing.T) inboxDB {
	path := filepath.Join(t.TempDir(), "inbox.db")
	d, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if _, err := d.DB().Exec(`CREATE TABLE invoices (message_id text, source text, body blob)`); err != nil {
		t.Fatal(err)
	}
	return inboxDB{url: path, invoices: func(t *testing.T) []string {
		t.Helper()
		rows, err := d.DB().Query(`SELECT message_id, coalesce(source, '-'), body FROM invoices ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		return invoiceRows(t, rows)
	}}
}

// invoiceRows reads the rows of SELECT message_id, source, body (a
// *sql.Rows or a pgx.Rows), "message_id source body" each.
func invoiceRows(t *testing.T, rows interface {
	Next() bool
	Scan(...any) error
	Err() error
}) []string {
	t.Helper()
	var got []string
	for rows.Next() {
		var id, source string
		var body []byte
		if err := rows.Scan(&id, &source, &body); err != nil {
			t.Fatal(err)
		}
		got = append(got, id+" "+source+" "+string(body))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// postgresDB is a fresh schema of the test database (TXINBOX_TEST_DATABASE_URL)
// with the invoices table; the program's URL has it as search_path.
func postgresDB(t *testing.T) inboxDB {
	pool := testdb.Require(t)
	schema := testdb.NewSchema(t, pool)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE `+schema+`.invoices (message_id text, source text, body bytea)`); err != nil {
		t.Fatal(err)
	}
	sep := "?"
	if strings.Contains(testdb.URL(), "?") {
		sep = "&"
	}
	return inboxDB{url: testdb.URL() + sep + "search_path=" + schema, invoices: func(t *testing.T) []string {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT message_id, coalesce(source, '-'), body FROM `+schema+`.invoices ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		return invoiceRows(t, rows)
	}}
}

// kafkaWithDuplicate starts an in-process Kafka cluster (kfake) with the
// topic "invoices" (retention.ms 7 days, shorter than the inbox's 30 days)
// holding one record produced twice with the same message-id header.
func kafkaWithDuplicate(t *testing.T) (*kfake.Cluster, *kadm.Client) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx := context.Background()
	adm := kadm.NewClient(cl)
	week := "604800000"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": &week}, "invoices"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r := &kgo.Record{Topic: "invoices", Value: []byte("12.50"), Headers: []kgo.RecordHeader{{Key: "message-id", Value: []byte("INV-1")}}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return cluster, adm
}

// args are the program's flags for db and cluster, then more.
func args(db inboxDB, cluster *kfake.Cluster, more ...string) []string {
	return append([]string{"--db", db.url, "--kafka-brokers", strings.Join(cluster.ListenAddrs(), ","),
		"--kafka-topics", "invoices", "--kafka-group", "billing", "--kafka-key", "header:message-id"}, more...)
}

// TestDuplicateIsOneEffectRow runs the program until the group's offset
// passed both copies of the record, then stops it: the statements ran
// once, for the first copy. On PostgreSQL the set-based statement reads
// new_messages, which exists only in the claim's statement: its row shows
// that the effect was joined to the claim.
func TestDuplicateIsOneEffectRow(t *testing.T) {
	for _, tc := range []struct {
		name      string
		db        func(*testing.T) inboxDB
		statement string
		want      string
	}{
		{"sqlite per message", sqliteDB, perMessage, "INV-1 kafka 12.50"},
		{"postgres per message", postgresDB, perMessage, "INV-1 kafka 12.50"},
		{"postgres set-based", postgresDB, "INSERT INTO invoices (message_id, body) SELECT message_id, payload FROM new_messages",
			"INV-1 - 12.50"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := tc.db(t)
			cluster, adm := kafkaWithDuplicate(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			var logs strings.Builder // written by run only, read after done
			go func() {
				done <- run(ctx, args(db, cluster, "--effect-sql", tc.statement), func(string) string { return "" }, &logs)
			}()
			kafkatest.AwaitOffset(t, adm, "billing", "invoices", 0, 2, done)
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("run: %v\n%s", err, logs.String())
			}
			if got := db.invoices(t); !slices.Equal(got, []string{tc.want}) {
				t.Errorf("invoices %q, want [%q]", got, tc.want)
			}
		})
	}
}

// TestTypoFailsAtStart runs the program as a process with a typo in its
// second statement: it exits 1 at start, naming the statement, and has
// consumed nothing (no offset committed, no effect row).
func TestTypoFailsAtStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		db   func(*testing.T) inboxDB
	}{{"sqlite", sqliteDB}, {"postgres", postgresDB}} {
		t.Run(tc.name, func(t *testing.T) {
			db := tc.db(t)
			cluster, adm := kafkaWithDuplicate(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], args(db, cluster, "--effect-sql", perMessage,
				"--effect-sql", "INSERT INTO invoice (message_id) VALUES ($2)")...)
			cmd.Env = append(os.Environ(), runMainEnv+"=1")
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("the program ended with %v, want exit status 1; output:\n%s", err, out)
			}
			if !strings.Contains(string(out), "sqleffect: --effect-sql statement 2: ") || !strings.Contains(string(out), "invoice") {
				t.Errorf("output %q, want the error of statement 2 naming the table", out)
			}
			offsets, err := adm.FetchOffsets(context.Background(), "billing")
			if o, ok := offsets.Lookup("invoices", 0); ok || err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
				t.Errorf("group billing: offset %+v (%v), want none committed", o, err)
			}
			t.Logf("%s", out)
			if got := db.invoices(t); len(got) != 0 {
				t.Errorf("invoices %q, want none", got)
			}
		})
	}
}

// TestOptions checks the flags that must be given, the environment's
// TXINBOX_* for flags not given, and --kafka-key.
func TestOptions(t *testing.T) {
	none := func(string) string { return "" }
	full := []string{"--db", "x.db", "--kafka-brokers", "b:9092", "--kafka-topics", "t", "--kafka-group", "g"}
	var out strings.Builder
	if _, err := parseOptions(full, none, &out); err == nil || err.Error() != "--effect-sql is required" {
		t.Errorf("without --effect-sql: %v", err)
	}
	env := map[string]string{"TXINBOX_EFFECT_SQL": "SELECT 1", "TXINBOX_DB": "env.db", "TXINBOX_RETENTION": "60d"}
	o, err := parseOptions(full, func(k string) string { return env[k] }, &out)
	if err != nil || o.db != "x.db" || !slices.Equal(o.statements, statementList{"SELECT 1"}) || o.retention != 60*24*time.Hour {
		t.Errorf("from the environment: %+v, %v", o, err)
	}
	if _, err := parseOptions(append(full, "--kafka-key", "message-id"), none, &out); err == nil ||
		!strings.Contains(err.Error(), "want offset or header:NAME") {
		t.Errorf("--kafka-key message-id: %v", err)
	}
}
