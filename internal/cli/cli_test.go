package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/cli"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/internal/cli/clitest"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// run runs a command in-process.
var run = clitest.Run

func TestUsage(t *testing.T) {
	_, errs, code := run(t)
	if code != clikit.ExitUsage || !strings.Contains(errs, "migrate") || strings.Contains(errs, "demo-consumer") {
		t.Errorf("no args: code %d, usage %q", code, errs)
	}
	_, errs, code = run(t, "frobnicate")
	if code != clikit.ExitUsage || !strings.Contains(errs, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: code %d, %q", code, errs)
	}
}

func TestMigrateAndAdminOnSQLite(t *testing.T) {
	db := filepath.Join(t.TempDir(), "inbox.db")
	for range 2 {
		if out, errs, code := run(t, "migrate", "--db", db); code != 0 || !strings.Contains(out, "migrated") {
			t.Fatalf("migrate: %d %q %q", code, out, errs)
		}
	}
	// Produce a drift record and a dead letter through the library.
	d, err := sqlitestore.Open(db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	driftAndDeadLetter(t, d)

	out, _, code := run(t, "status", "--db", db, "--json")
	var st map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st["inbox"] != 1.0 || st["drift"] != 1.0 || st["dead_letters"] != 1.0 {
		t.Errorf("status: %d %q", code, out)
	}
	if scopes, _ := st["scopes"].([]any); len(scopes) != 1 || scopes[0].(map[string]any)["scope"] != "s" ||
		scopes[0].(map[string]any)["inbox"] != 1.0 || scopes[0].(map[string]any)["expired"] != 0.0 {
		t.Errorf("status scopes: %v", st["scopes"])
	}
	if du, _ := st["durability"].(map[string]any); du == nil || du["settings"].(map[string]any)["synchronous"] != "FULL" ||
		len(du["risks"].([]any)) != 0 || !strings.Contains(du["crash"].(string), "loses no acked message") {
		t.Errorf("status durability: %v", st["durability"])
	}
	if out, _, code := run(t, "status", "--db", db); code != 0 || !strings.Contains(out, "EXPIRED (> 30d)") ||
		!strings.Contains(out, "no setting loses acknowledged messages") {
		t.Errorf("status table: %d %q", code, out)
	}
	out, _, code = run(t, "drift", "list", "--db", db)
	if code != 0 || !strings.Contains(out, "STORED SHA-256") || strings.Count(out, "\n") != 2 {
		t.Errorf("drift: %d %q", code, out)
	}
	out, _, code = run(t, "dlq", "list", "--db", db, "--json")
	var dl map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &dl) != nil || dl["message_id"] != "poison" || dl["reason"] != "permanent error" {
		t.Fatalf("dlq list: %d %q", code, out)
	}
	id := string(must(json.Marshal(dl["id"])))
	if out, _, code := run(t, "dlq", "show", "--db", db, id); code != 0 || !strings.Contains(out, `"last_error"`) {
		t.Errorf("dlq show: %d %q", code, out)
	}
	if _, errs, code := run(t, "dlq", "replay", "--db", db, id); code != clikit.ExitUsage || !strings.Contains(errs, "--reason is required") {
		t.Errorf("replay without reason: %d %q", code, errs)
	}
	if out, errs, code := run(t, "dlq", "replay", "--db", db, "--reason", "partner fixed", id); code != 0 || !strings.Contains(out, "replayable") {
		t.Errorf("replay: %d %q %q", code, out, errs)
	}
	if _, errs, code := run(t, "dlq", "show", "--db", db, id); code != clikit.ExitUsage || !strings.Contains(errs, "no dead letter") {
		t.Errorf("show after replay: %d %q", code, errs)
	}
	if _, errs, code := run(t, "dlq", "show", "--db", db, "x1"); code != clikit.ExitUsage || !strings.Contains(errs, "not a dead letter ID") {
		t.Errorf("show x1: %d %q", code, errs)
	}
	if _, errs, code := run(t, "dlq", "purr", "--db", db); code != clikit.ExitUsage || !strings.Contains(errs, "unknown subcommand") {
		t.Errorf("dlq purr: %d %q", code, errs)
	}
	out, _, code = run(t, "inspect", "--db", db, "--scope", "s", "a")
	var in map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &in) != nil || in["state"] != "processed" || len(in["drift"].([]any)) != 1 {
		t.Errorf("inspect a: %d %q", code, out)
	}
	// A dead letter next to an inbox row (another consumer committed the
	// message while this one failed) is stale: replaying it would delete the
	// inbox row and run the effect again.
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO txinbox_dead_letters (scope, message_id, payload, payload_hash, attempts, reason, last_error, received_at, dead_lettered_at)
		VALUES ('s', 'a', x'', x'', 1, 'permanent error', 'boom', '2026-01-01T00:00:00.000000000Z', '2026-01-01T00:00:00.000000000Z')`); err != nil {
		t.Fatal(err)
	}
	var stale int64
	if err := raw.QueryRow(`SELECT id FROM txinbox_dead_letters WHERE message_id = 'a'`).Scan(&stale); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if _, errs, code := run(t, "dlq", "replay", "--db", db, "--reason", "retry", fmt.Sprint(stale)); code != clikit.ExitFailure || !strings.Contains(errs, "is stale") {
		t.Errorf("replay of a stale dead letter: %d %q", code, errs)
	}
	if out, _, code := run(t, "inspect", "--db", db, "--scope", "s", "a"); code != 0 || !strings.Contains(out, `"processed (stale dead letter: drop it)"`) {
		t.Errorf("the inbox row of a refused replay: %d %q", code, out)
	}
	if _, errs, code := run(t, "dlq", "drop", "--db", db, "--reason", "stale", fmt.Sprint(stale)); code != 0 {
		t.Errorf("drop of a stale dead letter: %d %q", code, errs)
	}
	if _, _, code := run(t, "inspect", "--db", db, "--scope", "s", "never"); code != clikit.ExitFailure {
		t.Errorf("inspect of an unknown id exited %d, want 1", code)
	}
	if out, errs, code := run(t, "forget", "--db", db, "--scope", "s", "--reason", "resend INV-1", "a"); code != 0 || !strings.Contains(out, "forgot") {
		t.Errorf("forget: %d %q %q", code, out, errs)
	}
	if _, _, code := run(t, "forget", "--db", db, "--scope", "s", "--reason", "again", "a"); code != clikit.ExitFailure {
		t.Errorf("forget twice exited %d, want 1", code)
	}
	if _, _, code := run(t, "forget", "--db", db, "--scope", "s", "a"); code != clikit.ExitUsage {
		t.Errorf("forget without a reason exited %d, want 2", code)
	}
}

func TestBadDatabaseFlags(t *testing.T) {
	dir := t.TempDir()
	missing, blank := filepath.Join(dir, "missing.db"), filepath.Join(dir, "blank.db")
	if err := os.WriteFile(blank, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		// The admin commands never create a database by a typo.
		{[]string{"status", "--db", missing}, "no such file or directory (create the inbox with txinbox migrate"},
		{[]string{"purge", "--dry-run", "--db", missing}, "no such file"},
		{[]string{"dlq", "list", "--db", dir}, "is a directory"},
		{[]string{"inspect", "--db", blank, "--scope", "s", "a"}, "has no txinbox tables"},
		{[]string{"drift", "list", "--db", blank, "--limit", "0"}, "--limit must be at least 1"},
		{[]string{"migrate"}, "--db is required"},
		{[]string{"migrate", "--db", "x.db", "--schema", "s"}, "--schema applies to PostgreSQL only"},
		{[]string{"migrate", "--db", "x.db", "--table-prefix", "Bad-Prefix"}, "TablePrefix"},
		{[]string{"migrate", "--db", "postgres://u@127.0.0.1:1/x?connect_timeout=1"}, "connecting to postgres://u@127.0.0.1:1/x"},
		{[]string{"status", "--db", "postgres://u:secret@127.0.0.1:1/x?connect_timeout=1"}, "connecting"},
		{[]string{"migrate", "--db", "sqlserver://sa:secret@127.0.0.1:1433/inbox"}, `does not serve the scheme "sqlserver"`},
	} {
		_, errs, code := run(t, tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) || strings.Contains(errs, "secret") {
			t.Errorf("%v: code %d, stderr %q, want %q", tc.args, code, errs, tc.want)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("an admin command created %s: %v", missing, err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestPurgeCommand(t *testing.T) {
	db, d := migratedSQLite(t)
	ctx := context.Background()
	p, _ := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: "s",
		Handler: func(context.Context, *sql.Tx, *txinbox.Message) error { return nil }})
	old := time.Now().Add(-45 * 24 * time.Hour)
	if _, err := p.Process(ctx, []*txinbox.Message{{ID: "a", ReceivedAt: old}, {ID: "b", ReceivedAt: old}, {ID: "c"}}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	out, errs, code := run(t, "purge", "--db", db, "--dry-run", "--json")
	var res map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res["inbox"] != 2.0 {
		t.Fatalf("purge --dry-run: %d %q %q", code, out, errs)
	}
	if out, _, code := run(t, "purge", "--db", db, "--older-than", "30d"); code != 0 || !strings.HasPrefix(out, "purged 2 inbox rows") {
		t.Errorf("purge: %d %q", code, out)
	}
	if out, _, _ := run(t, "status", "--db", db, "--json"); !strings.Contains(out, `"inbox":1`) {
		t.Errorf("after purge: %s", out)
	}
	if _, errs, code := run(t, "purge", "--db", db, "--older-than", "-3d"); code != clikit.ExitUsage || !strings.Contains(errs, "--older-than") {
		t.Errorf("bad --older-than: %d %q", code, errs)
	}
}

// TestStatusScopeRetention: each scope's expired rows count against its own
// retention when --scope-retention names it.
func TestStatusScopeRetention(t *testing.T) {
	db, d := migratedSQLite(t)
	ctx := context.Background()
	forty := time.Now().Add(-40 * 24 * time.Hour)
	for _, scope := range []string{"as4", "kafka"} {
		p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: scope,
			Handler: func(context.Context, *sql.Tx, *txinbox.Message) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Process(ctx, []*txinbox.Message{{ID: "old", ReceivedAt: forty}, {ID: "new"}}); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	out, errs, code := run(t, "status", "--db", db, "--json", "--scope-retention", "as4=90d")
	var st struct {
		Scopes []struct {
			Scope, Retention string
			Expired          int
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Scopes) != 2 {
		t.Fatalf("status: %d %q %q", code, out, errs)
	}
	for _, x := range st.Scopes {
		want := map[string]struct {
			ret     string
			expired int
		}{"as4": {"90d", 0}, "kafka": {"30d", 1}}[x.Scope]
		if x.Retention != want.ret || x.Expired != want.expired {
			t.Errorf("scope %s: retention %s, %d expired; want %s and %d", x.Scope, x.Retention, x.Expired, want.ret, want.expired)
		}
	}
	if out, _, code := run(t, "status", "--db", db, "--scope-retention", "as4=90d"); code != 0 || !strings.Contains(out, "RETENTION") {
		t.Errorf("status table: %d %q", code, out)
	} else if !regexp.MustCompile(`oldest inbox row +\S+ \(40d\S* ago\)`).MatchString(out) {
		t.Errorf("status: the oldest row's age is not in the duration syntax of the flags (40d...):\n%s", out)
	}
	if _, errs, code := run(t, "status", "--db", db, "--scope-retention", "as4"); code != clikit.ExitUsage || !strings.Contains(errs, `"as4" is not SCOPE=DURATION`) {
		t.Errorf("bad --scope-retention: %d %q", code, errs)
	}
}

// migratedSQLite creates a migrated SQLite inbox in a temporary directory
// and returns its path and driver (close it before running commands on it).
func migratedSQLite(t *testing.T) (string, *sqlitestore.Driver) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "inbox.db")
	d, err := sqlitestore.Open(db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db, d
}

// TestNumericFlagsAreChecked: a numeric flag out of range is refused when
// it is parsed, naming the flag, with exit 2, whatever the command and
// wherever the value comes from (command line, environment).
func TestNumericFlagsAreChecked(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "n.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"purge", "--db", db, "--batch", "0"}, "--batch must be at least 1, not 0"},
		{[]string{"purge", "--db", db, "--batch", "-5"}, "--batch must be at least 1, not -5"},
		{[]string{"purge", "--db", db, "--batch", "many"}, `--batch must be a whole number, not "many"`},
		{[]string{"relay", "--db", db, "--target", "http", "--http-url", "http://x", "--concurrency", "0"}, "--concurrency must be at least 1, not 0"},
		{[]string{"relay", "list-failed", "--db", db, "--limit", "0"}, "--limit must be at least 1, not 0"},
		{[]string{"dlq", "list", "--db", db, "--limit", "-1"}, "--limit must be at least 1, not -1"},
		{[]string{"serve", "--db", db, "--purge-interval", "0s"}, "--purge-interval must be positive, not 0s"},
		{[]string{"serve", "--db", db, "--kafka-session-timeout", "-1s"}, "--kafka-session-timeout must not be negative, not -1s"},
		{[]string{"serve", "--db", db, "--kafka-brokers", "k:9092", "--kafka-topics", "t", "--kafka-group", "g", "--kafka-session-timeout", "0s"},
			"--kafka-session-timeout must be positive, not 0s"},
		{[]string{"serve", "--db", db, "--nats-url", "nats://n", "--nats-stream", "s", "--nats-consumer", "c", "--nats-ack-wait", "500ms"},
			"--nats-ack-wait 500ms: must be at least 1s"},
		{[]string{"serve", "--db", db, "--relay-batch", "0"}, "--relay-batch must be at least 1, not 0"},
		{[]string{"serve", "--db", db, "--as4-max-body", "0"}, "--as4-max-body must be at least 1, not 0"},
		{[]string{"demo", "--duplicates", "1.5"}, `--duplicates must be a number from 0 to 1, not "1.5"`},
		{[]string{"demo", "--duplicates", "NaN"}, `--duplicates must be a number from 0 to 1, not "NaN"`},
		{[]string{"bench", "--conns", "0"}, "--conns must be at least 1, not 0"},
		{[]string{"migrate", "--db", db, "--partition-period", "0s"}, "--partition-period must be positive, not 0s"},
	} {
		if _, errs, code := run(t, c.args...); code != clikit.ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errs, clikit.ExitUsage, c.want)
		}
	}
	var errb bytes.Buffer
	env := &clikit.Env{Stdout: io.Discard, Stderr: &errb, Stdin: strings.NewReader(""), Getenv: func(k string) string {
		if k == "TXINBOX_PURGE_INTERVAL" {
			return "-1m"
		}
		return ""
	}}
	if code := cli.Main(context.Background(), env, []string{"serve", "--db", db}); code != clikit.ExitUsage ||
		!strings.Contains(errb.String(), "TXINBOX_PURGE_INTERVAL") || !strings.Contains(errb.String(), "must not be negative") {
		t.Errorf("TXINBOX_PURGE_INTERVAL=-1m: exit %d, stderr %q", code, errb.String())
	}
}
