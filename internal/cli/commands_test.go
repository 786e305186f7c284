package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/cli"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// runEnv runs a command in-process with these environment variables.
func runEnv(t *testing.T, vars map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &clikit.Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""), Getenv: func(k string) string { return vars[k] }}
	code := cli.Main(context.Background(), env, args)
	return out.String(), errb.String(), code
}

// adminInbox is a SQLite inbox with, in scope s: message a processed with
// drift, and message poison dead-lettered. It returns the path and the
// dead letter's ID.
func adminInbox(t *testing.T) (string, string) {
	t.Helper()
	db, d := migratedSQLite(t)
	driftAndDeadLetter(t, d)
	out, _, _ := run(t, "dlq", "list", "--db", db, "--json")
	var dl struct{ ID int64 }
	if err := json.Unmarshal([]byte(out), &dl); err != nil {
		t.Fatalf("dlq list: %q: %v", out, err)
	}
	return db, fmt.Sprint(dl.ID)
}

// driftAndDeadLetter processes, in scope s, message a twice with two
// payloads (a drift record) and message poison, which fails for good (a
// dead letter); then it closes d.
func driftAndDeadLetter(t *testing.T, d *sqlitestore.Driver) {
	t.Helper()
	defer d.Close()
	p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: "s",
		Handler: func(_ context.Context, _ *sql.Tx, m *txinbox.Message) error {
			if m.ID == "poison" {
				return txinbox.Permanent(context.DeadlineExceeded)
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*txinbox.Message{{ID: "a", Payload: []byte("1")}, {ID: "a", Payload: []byte("2")}, {ID: "poison"}} {
		if _, err := p.Process(context.Background(), []*txinbox.Message{m}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFlagsAfterArguments: flags after the positional arguments work, a
// subcommand must come first, drift show exists and an unknown subcommand
// is an error (issue 16).
func TestFlagsAfterArguments(t *testing.T) {
	t.Parallel()
	db, id := adminInbox(t)
	if out, errs, code := run(t, "dlq", "show", id, "--db", db); code != 0 || !strings.Contains(out, `"message_id": "poison"`) {
		t.Errorf("dlq show ID --db: %d %q %q", code, out, errs)
	}
	if out, errs, code := run(t, "inspect", "a", "--db", db, "--scope", "s"); code != 0 || !strings.Contains(out, `"state": "processed"`) {
		t.Errorf("inspect ID --db --scope: %d %q %q", code, out, errs)
	}
	out, errs, code := run(t, "drift", "list", "--json", "--db", db)
	var dr struct{ ID int64 }
	if code != 0 || json.Unmarshal([]byte(out), &dr) != nil {
		t.Fatalf("drift list: %d %q %q", code, out, errs)
	}
	for _, args := range [][]string{{"drift", "show", fmt.Sprint(dr.ID), "--db", db}, {"drift", "show", "--db", db, fmt.Sprint(dr.ID)}} {
		if out, errs, code := run(t, args...); code != 0 || !strings.Contains(out, `"message_id": "a"`) || !strings.Contains(out, `"received_hash"`) {
			t.Errorf("%v: %d %q %q", args, code, out, errs)
		}
	}
	// A flag's value that names a subcommand is a value: the scope "show".
	if out, errs, code := run(t, "dlq", "--db", db, "--scope", "show"); code != 0 || !strings.HasPrefix(out, "ID") {
		t.Errorf("dlq --scope show (the default list): %d %q %q", code, out, errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"drift", "--db", db, "show", "1"}, "put the subcommand first: txinbox drift show"},
		{[]string{"dlq", "--scope", "show", "--db", db, "drop", "1"}, "put the subcommand first: txinbox dlq drop"},
		{[]string{"drift", "frob", "--db", db}, `unknown subcommand "frob"`},
		{[]string{"drift", "show", "999", "--db", db}, "no drift record with ID 999"},
		{[]string{"drift", "list", "extra", "--db", db}, `unexpected argument "extra"`},
		{[]string{"dlq", "show", id, "7", "--db", db}, `unexpected argument "7"`},
		{[]string{"inspect", "a", "--db", db}, "--scope is required"},
		{[]string{"inspect", "a", "--db", db, "--scope", "s", "--limit", "5"}, "unknown flag --limit"},
		{[]string{"inspect", "a", "--db", db, "--scope", "s", "--json"}, "unknown flag --json"},
		{[]string{"key", "--", "--json"}, "--json: open --json"},
	} {
		if _, errs, code := run(t, c.args...); code != clikit.ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}

// TestDurationsEverywhere: every duration flag takes days and
// combinations (issue 16: --partition-period 7d and --purge-interval 1d
// were refused).
func TestDurationsEverywhere(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "d.db")
	if _, errs, code := run(t, "migrate", "--db", db, "--partition-period", "7d"); code != 0 {
		t.Errorf("migrate --partition-period 7d: %d %q", code, errs)
	}
	if out, errs, code := run(t, "status", "--db", db, "--retention", "1d12h"); code != 0 || !strings.Contains(out, "EXPIRED (> 1d12h)") {
		t.Errorf("status --retention 1d12h: %d %q %q", code, out, errs)
	}
	if out, errs, code := run(t, "purge", "--db", db, "--older-than", "36h", "--dry-run"); code != 0 || !strings.Contains(out, "older than 1d12h") {
		t.Errorf("purge --older-than 36h: %d %q %q", code, out, errs)
	}
	// serve gets past its flags (to "no source") with days in each.
	_, errs, code := run(t, "serve", "--db", db, "--purge-interval", "1d", "--shutdown-timeout", "1m30s", "--read-timeout", "0.5d")
	if code != clikit.ExitUsage || !strings.Contains(errs, "no source") {
		t.Errorf("serve --purge-interval 1d: %d %q", code, errs)
	}
	if _, errs, code := run(t, "migrate", "--db", db, "--partition-period", "7 days"); code != clikit.ExitUsage ||
		!strings.Contains(errs, `--partition-period must be a duration (e.g. 30d, 1d12h, 5m, 30s), not "7 days"`) {
		t.Errorf("--partition-period '7 days': %d %q", code, errs)
	}
}

// TestEnvironmentVariables: every command reads TXINBOX_<FLAG> for the
// flags the command line left unset; the command line wins.
func TestEnvironmentVariables(t *testing.T) {
	t.Parallel()
	db, id := adminInbox(t)
	env := map[string]string{"TXINBOX_DB": db, "TXINBOX_SCOPE": "s"}
	if out, errs, code := runEnv(t, env, "inspect", "a"); code != 0 || !strings.Contains(out, `"state": "processed"`) {
		t.Errorf("inspect with TXINBOX_DB and TXINBOX_SCOPE: %d %q %q", code, out, errs)
	}
	if out, errs, code := runEnv(t, env, "dlq", "show", id); code != 0 || !strings.Contains(out, "poison") {
		t.Errorf("dlq show with TXINBOX_DB: %d %q %q", code, out, errs)
	}
	wrong := map[string]string{"TXINBOX_DB": filepath.Join(t.TempDir(), "missing.db"), "TXINBOX_SCOPE": "other"}
	if out, errs, code := runEnv(t, wrong, "inspect", "--db", db, "--scope", "s", "a"); code != 0 || !strings.Contains(out, `"state": "processed"`) {
		t.Errorf("flags over the environment: %d %q %q", code, out, errs)
	}
	if _, errs, code := runEnv(t, map[string]string{"TXINBOX_DB": db, "TXINBOX_LIMIT": "0"}, "dlq", "list"); code != clikit.ExitUsage ||
		!strings.Contains(errs, `environment TXINBOX_LIMIT: invalid value "0"`) {
		t.Errorf("TXINBOX_LIMIT=0: %d %q", code, errs)
	}
	if _, errs, code := runEnv(t, map[string]string{"TXINBOX_PARTITION_PERIOD": "2d"}, "migrate", "--db", filepath.Join(t.TempDir(), "e.db")); code != 0 {
		t.Errorf("TXINBOX_PARTITION_PERIOD=2d: %d %q", code, errs)
	}
}

// TestStatusTotalsAgree: the totals are the sums of the scope rows (they
// counted dropped dead letters, and attempt rows of processed messages,
// which the scope rows leave out).
func TestStatusTotalsAgree(t *testing.T) {
	t.Parallel()
	db, id := adminInbox(t)
	if _, errs, code := run(t, "dlq", "drop", id, "--db", db, "--reason", "handled"); code != 0 {
		t.Fatalf("dlq drop: %d %q", code, errs)
	}
	out, errs, code := run(t, "status", "--db", db, "--json")
	var st struct {
		Inbox, Attempts, DeadLetters, Drift int64
		Scopes                              []struct{ Inbox, Failing, DeadLetters, Drift int64 }
	}
	if code != 0 || json.Unmarshal([]byte(strings.ReplaceAll(out, "dead_letters", "deadletters")), &st) != nil {
		t.Fatalf("status: %d %q %q", code, out, errs)
	}
	var sum [4]int64
	for _, x := range st.Scopes {
		sum[0], sum[1], sum[2], sum[3] = sum[0]+x.Inbox, sum[1]+x.Failing, sum[2]+x.DeadLetters, sum[3]+x.Drift
	}
	if got := [4]int64{st.Inbox, st.Attempts, st.DeadLetters, st.Drift}; got != sum {
		t.Errorf("totals %v, scope rows add up to %v:\n%s", got, sum, out)
	}
}

// TestVersion: txinbox version and --version print the build information.
func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if out, errs, code := run(t, args...); code != 0 || !strings.HasPrefix(out, "txinbox ") || !strings.Contains(out, "\ngo ") {
			t.Errorf("%v: %d %q %q", args, code, out, errs)
		}
	}
	out, _, code := run(t, "version", "--json")
	var v struct{ Version, Module, Go string }
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Version == "" || !strings.HasPrefix(v.Go, "go1.") {
		t.Errorf("version --json: %d %q", code, out)
	}
}

// TestCompletion runs the bash completion script through bash (and the zsh
// one through zsh, if it is installed): it
// completes commands, subcommands and flags.
func TestCompletion(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash:", err)
	}
	script, errs, code := run(t, "completion", "bash")
	if code != 0 {
		t.Fatalf("completion bash: %d %q", code, errs)
	}
	path := filepath.Join(t.TempDir(), "txinbox.bash")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) string {
		t.Helper()
		line := fmt.Sprintf(`source %q && complete -p txinbox >/dev/null && COMP_WORDS=(%s) && COMP_CWORD=%d && _txinbox && echo "${COMPREPLY[*]}"`,
			path, strings.Join(words, " "), len(words)-1)
		out, err := exec.Command(bash, "--norc", "--noprofile", "-c", line).CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, c := range []struct {
		words []string
		want  string
	}{
		{[]string{"txinbox", "dl"}, "dlq"},
		{[]string{"txinbox", "dlq", "sh"}, "show"},
		{[]string{"txinbox", "dlq", "show", "--d"}, "--db"},
		{[]string{"txinbox", "dlq", "--li"}, "--limit"}, // the default subcommand's flags
		{[]string{"txinbox", "serve", "--kafka-bro"}, "--kafka-brokers"},
		{[]string{"txinbox", "completion", "z"}, "zsh"},
		{[]string{"txinbox", "relay", "list"}, "list-failed"},
	} {
		if got := complete(c.words...); got != c.want {
			t.Errorf("%v: completed %q, want %q", c.words, got, c.want)
		}
	}
	if got := complete("txinbox", "''"); !strings.Contains(got, "migrate") || strings.Contains(got, "demo-consumer") {
		t.Errorf("commands: %q", got)
	}
	if _, errs, code := run(t, "completion", "fish"); code != clikit.ExitUsage || !strings.Contains(errs, `SHELL "fish"`) {
		t.Errorf("completion fish: %d %q", code, errs)
	}
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Log("no zsh: its script is not tried")
		return
	}
	script, _, _ = run(t, "completion", "zsh")
	zpath := filepath.Join(t.TempDir(), "_txinbox")
	if err := os.WriteFile(zpath, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf(`autoload -U compinit && compinit -u -d %q && source %q && echo ${_comps[txinbox]} && `+
		`__txinbox_complete dlq '' sh && __txinbox_complete dlq show --d`, filepath.Join(t.TempDir(), "zcompdump"), zpath)
	out, err := exec.Command(zsh, "-f", "-c", line).CombinedOutput()
	if want := "_txinbox\nlist show replay drop\n--db --schema --table-prefix --help\n"; err != nil || string(out) != want {
		t.Errorf("zsh: %v, printed %q, want %q", err, out, want)
	}
}

// TestRelayLogs: relay's startup line goes through the logger that
// --log-format and --log-level make; every long-running command checks
// them.
func TestRelayLogs(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "r.db")
	// The relay runs until its context ends: end it once the startup line is
	// out (migrating SQLite first can take seconds on a loaded machine; a
	// fixed 1.5 s deadline used to run out before the line), or after a
	// minute, which fails below.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	errb := &cancelOnLine{needle: "relaying the outbox", cancel: cancel}
	env := &clikit.Env{Stdout: &out, Stderr: errb, Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	code := cli.Main(ctx, env, []string{"relay", "--db", db, "--target", "http", "--http-url", "http://127.0.0.1:1/", "--log-format", "json"})
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("relay logged no startup line within a minute: stderr %q", errb.String())
	}
	var line struct{ Level, Msg, Target string }
	first, _, _ := strings.Cut(errb.String(), "\n")
	if code != 0 || json.Unmarshal([]byte(first), &line) != nil || line.Msg != "txinbox relay: relaying the outbox" || line.Target != "http" {
		t.Errorf("relay --log-format json: %d, stderr %q, stdout %q", code, errb.String(), out.String())
	}
	if strings.Contains(errb.String(), "<nil>") {
		t.Errorf("a log line with a nil value: %q", errb.String())
	}
	for _, cmd := range [][]string{{"relay", "--db", db, "--target", "http", "--http-url", "http://x/"}, {"serve", "--db", db, "--as4-listen", "127.0.0.1:0"},
		{"demo"}, {"bench"}} {
		for _, bad := range [][]string{{"--log-level", "loud"}, {"--log-format", "xml"}} {
			args := append(append([]string{}, cmd...), bad...)
			if _, errs, code := run(t, args...); code != clikit.ExitUsage || !strings.Contains(errs, bad[0]+` "`+bad[1]+`"`) {
				t.Errorf("%v: %d %q", args, code, errs)
			}
		}
	}
}

// cancelOnLine collects what is written to it and calls cancel once a
// complete line containing needle has been written.
type cancelOnLine struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	needle string
	cancel func()
}

func (w *cancelOnLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for line := range strings.Lines(w.buf.String()) {
		if strings.HasSuffix(line, "\n") && strings.Contains(line, w.needle) {
			w.cancel()
		}
	}
	return len(p), nil
}

func (w *cancelOnLine) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestReplayWithoutMessageIDRefused: dlq replay of a dead letter stored
// without a message id is refused (exit 1) and leaves the other such dead
// letters of its scope alone; forgetting "" used to delete them all.
func TestReplayWithoutMessageIDRefused(t *testing.T) {
	t.Parallel()
	db, d := migratedSQLite(t)
	p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: "s",
		Handler: func(context.Context, *sql.Tx, *txinbox.Message) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	for _, payload := range []string{"first", "second"} {
		if _, err := p.Process(context.Background(), []*txinbox.Message{{Payload: []byte(payload)}}); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	out, errs, code := run(t, "dlq", "list", "--json", "--db", db)
	var first struct{ ID int64 }
	if code != 0 || strings.Count(out, `"id"`) != 2 || json.NewDecoder(strings.NewReader(out)).Decode(&first) != nil {
		t.Fatalf("dlq list: %d %q %q, want two dead letters without an id", code, out, errs)
	}
	_, errs, code = run(t, "dlq", "replay", fmt.Sprint(first.ID), "--db", db, "--reason", "try")
	if code != clikit.ExitFailure || !strings.Contains(errs, "has no message id") {
		t.Errorf("dlq replay of a dead letter without an id: exit %d, %q; want 1 and why", code, errs)
	}
	if out, _, _ := run(t, "dlq", "list", "--json", "--db", db); strings.Count(out, `"id"`) != 2 {
		t.Errorf("after the refused replay, dlq list = %s; want both dead letters", out)
	}
}

// TestEnvValueErrorNamesVariable: a bad value from a TXINBOX_* variable
// is reported with the variable's name, whether the flag refuses it when
// set (--shutdown-timeout) or the command finds it later (serve's
// --retention, status's --scope-retention); a YAML value names its line,
// and the same value on the command line names the flag alone.
func TestEnvValueErrorNamesVariable(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "i.db")
	yaml := filepath.Join(t.TempDir(), "txinbox.yaml")
	if err := os.WriteFile(yaml, []byte("retention: later\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := []string{"serve", "--db", db, "--as4-listen", "127.0.0.1:0"}
	for _, tc := range []struct {
		vars map[string]string
		args []string
		want string
	}{
		{map[string]string{"TXINBOX_RETENTION": "abc"}, serve,
			`txinbox serve: environment TXINBOX_RETENTION: --retention: "abc" is not a positive duration`},
		{map[string]string{"TXINBOX_SHUTDOWN_TIMEOUT": "abc"}, serve,
			`txinbox serve: environment TXINBOX_SHUTDOWN_TIMEOUT: invalid value "abc": --shutdown-timeout must be a duration`},
		{map[string]string{"TXINBOX_SCOPE_RETENTION": "as4"}, []string{"status", "--db", db},
			"txinbox status: environment TXINBOX_SCOPE_RETENTION: --scope-retention: "},
		{nil, append(serve, "--retention", "abc"), `txinbox serve: --retention: "abc" is not a positive duration`},
		{map[string]string{"TXINBOX_RETENTION": "30d"}, append(serve, "--retention", "abc"),
			`txinbox serve: --retention: "abc" is not a positive duration`},
		{nil, append(serve, "--config", yaml), "txinbox serve: config " + yaml + ` line 1: --retention: "later" is not a positive duration`},
	} {
		_, errs, code := runEnv(t, tc.vars, tc.args...)
		if code != clikit.ExitUsage || !strings.HasPrefix(errs, tc.want) {
			t.Errorf("%v %v: exit %d, stderr %q, want it to start with %q", tc.vars, tc.args, code, errs, tc.want)
		}
	}
}

// TestHostileArguments: a huge value is not echoed whole in the one-line
// error (its start and end are), and an empty positional argument is
// refused as a usage error, not looked up.
func TestHostileArguments(t *testing.T) {
	t.Parallel()
	db, _ := migratedSQLite(t)
	huge := "h" + strings.Repeat("x", 100_000) + "z"
	_, errs, code := run(t, "status", "--db", db, "--table-prefix", huge)
	if code != clikit.ExitUsage || len(errs) > 2_500 || !strings.Contains(errs, "TablePrefix \"hxxx") || !strings.Contains(errs, "xxxz") {
		t.Errorf("huge --table-prefix: exit %d, %d bytes of stderr (%.200q); want 2 and a clipped message", code, len(errs), errs)
	}
	if _, errs, code := run(t, huge); code != clikit.ExitUsage || len(errs) > 2_500 || !strings.Contains(errs, "unknown command") {
		t.Errorf("huge command name: exit %d, %d bytes of stderr; want 2 and a clipped message", code, len(errs))
	}
	for _, args := range [][]string{
		{"inspect", "--db", db, "--scope", "s", ""},
		{"forget", "--db", db, "--scope", "s", "--reason", "r", ""},
		{"dlq", "show", "--db", db, ""},
		{"key", ""},
	} {
		_, errs, code := run(t, args...)
		if code != clikit.ExitUsage || !strings.Contains(errs, "is empty") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and the empty argument named", args, code, errs)
		}
	}
	// A required flag of blanks is missing: no audit row without a reason.
	if _, errs, code := run(t, "forget", "--db", db, "--scope", "s", "--reason", " \t ", "a"); code != clikit.ExitUsage || !strings.Contains(errs, "--reason is required") {
		t.Errorf("forget --reason of blanks: exit %d, stderr %q; want 2 and --reason is required", code, errs)
	}
}
