package serve_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/cli"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// TestServeTwoSourcesOfOneKind: a config file's nats: list runs two NATS
// sources (two durable consumers of one stream), each named in the ready
// line, in /readyz and in the source label of txinbox_source_lag, each
// writing its own scope (its name).
func TestServeTwoSourcesOfOneKind(t *testing.T) {
	t.Parallel()
	natsURL, js := startNATS(t)
	publishOrders(t, js, 3, 0)
	dir := t.TempDir()
	path, conf := filepath.Join(dir, "two.db"), filepath.Join(dir, "txinbox.yaml")
	yaml := "no-purge: true\nhttp-listen: 127.0.0.1:0\nnats:\n" +
		"  - {name: east, url: " + natsURL + ", stream: ORDERS, consumer: east, key: header:message-id}\n" +
		"  - {name: west, url: " + natsURL + ", stream: ORDERS, consumer: west, key: header:message-id}\n"
	if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errs := &lineWriter{lines: make(chan string, 64), logged: true}, &syncBuffer{}
	env := &clikit.Env{Stdout: out, Stderr: io.MultiWriter(errs, out), Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() { done <- cli.Main(ctx, env, []string{"serve", "--db", path, "--config", conf}) }()
	var opsURL, ready string
	for ready == "" {
		select {
		case line := <-out.lines:
			if rest, ok := strings.CutPrefix(line, "health and metrics on "); ok {
				opsURL, _, _ = strings.Cut(rest, " ")
			}
			if rest, ok := strings.CutPrefix(line, "ready: "); ok {
				ready = rest
			}
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errs)
		case <-time.After(60 * time.Second):
			t.Fatalf("serve did not start: %s", errs)
		}
	}
	if ready != "east, west" {
		t.Errorf("ready: %q, want east, west", ready)
	}
	waitFor(t, "both consumers acked everything", func() bool {
		for _, c := range []string{"east", "west"} {
			cons, err := js.Consumer(ctx, "ORDERS", c)
			if err != nil {
				return false
			}
			info, err := cons.Info(ctx)
			if err != nil || info.NumPending != 0 || info.NumAckPending != 0 || info.Delivered.Consumer != 3 {
				return false
			}
		}
		return true
	})
	body := httpGet(t, opsURL+"/readyz")
	metrics := httpGet(t, opsURL+"/metrics")
	for _, want := range []string{`"east":"ok"`, `"west":"ok"`} {
		if !strings.Contains(body, want) {
			t.Errorf("/readyz %s lacks %s", body, want)
		}
	}
	for _, want := range []string{`txinbox_source_lag{partition="",scope="east",source="east"} 0`, `txinbox_source_lag{partition="",scope="west",source="west"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	cancel()
	if code := <-done; code != clikit.ExitOK {
		t.Fatalf("serve exited %d: %s", code, errs)
	}
	d, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, scope := range []string{"east", "west"} {
		var n int
		if err := d.DB().QueryRow(`SELECT count(*) FROM txinbox_inbox WHERE scope = ?`, scope).Scan(&n); err != nil || n != 3 {
			t.Errorf("scope %s: %d inbox rows (%v), want 3", scope, n, err)
		}
	}
}

// TestServeSourceListErrors: a listed source's mistakes name the file and
// line; two sources of one name are refused.
func TestServeSourceListErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ yaml, want string }{
		{"kafka:\n  - {name: a, brokers: k:9092, topics: t, group: g, colour: red}\n", `line 2: kafka source: unknown setting "colour"`},
		{"kafka:\n  - {name: a, brokers: k:9092, topics: t}\n", `line 2: kafka source "a": --kafka-group is required`},
		{"sqs:\n  - {name: a, queue-url: http://q/1, region: r}\n  - {name: a, queue-url: http://q/2, region: r}\n", `line 3: two sources are named "a"`},
		{"kafka: k:9092\n", "kafka: want a list of sections"},
		{"nats:\n  - name: a\n    url: nats://n:4222\n    stream: S\n    consumer: c\n    ack-wait: soon\n", `config FILE line 6: nats source: ack-wait: invalid value "soon"`},
		{"retention: later\nas4-listen: :0\n", `config FILE line 1: --retention: "later" is not a positive duration`},
		{"as4-lisen: :0\n", `config FILE line 1: unknown setting "as4-lisen" (settings are the flags of txinbox serve)`},
		// A NUL (YAML's "\0") would cut a file name short or fail every insert.
		{"http-listen: \"\"\nscope: \"as\\0four\"\n", `config FILE line 2: scope: invalid value "as\x00four": has a NUL byte`},
		{"nats:\n  - {name: a, url: nats://n:4222, stream: S, scope: \"s\\0\"}\n", `config FILE line 2: nats source: scope: invalid value "s\x00": has a NUL byte`},
	} {
		conf := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(conf, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errs := runServeArgs(t, "--db", filepath.Join(t.TempDir(), "x.db"), "--config", conf)
		want := strings.ReplaceAll(c.want, "FILE", conf)
		if code != clikit.ExitUsage || !strings.Contains(errs, want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", c.yaml, code, errs, want)
		}
	}
}

func runServeArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errs strings.Builder
	env := &clikit.Env{Stdout: &out, Stderr: &errs, Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	code := cli.Main(context.Background(), env, append([]string{"serve"}, args...))
	return code, out.String(), errs.String()
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestServeUnreachableDatabase: a database that does not answer is a
// failure of the run (exit 1, docs/operations.md), not bad input.
func TestServeUnreachableDatabase(t *testing.T) {
	t.Parallel()
	code, _, errs := runServeArgs(t, "--db", "postgres://txinbox@"+deadAddr(t)+"/x?connect_timeout=2", "--as4-listen", "127.0.0.1:0")
	if code != clikit.ExitFailure || !strings.Contains(errs, "connecting to postgres://txinbox@127.0.0.1") {
		t.Errorf("exit %d, %q; want 1 and the database named", code, errs)
	}
	// Its help says so, as the other commands' say exit 2 for theirs.
	if _, help, _ := runServeArgs(t, "-h"); !strings.Contains(help, "1  a source or the database failed (also a database that does not answer at start)") {
		t.Errorf("serve -h does not say that an unreachable database exits 1:\n%s", help)
	}
}
