package serve_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/cli"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/store/sqlitestore"
	"github.com/txinbox/txinbox/webhooksig"
)

// startIngress runs serve with args and returns the ingress's base URL
// (…/ingest/) once it listens, and the stop func.
func startIngress(t *testing.T, args ...string) (string, func() int, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &lineWriter{lines: make(chan string, 64), logged: true}
	errs := &syncBuffer{}
	env := &clikit.Env{Stdout: out, Stderr: io.MultiWriter(errs, out), Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() { done <- cli.Main(ctx, env, append([]string{"serve"}, args...)) }()
	stop := func() int {
		cancel()
		return <-done
	}
	for {
		select {
		case line := <-out.lines:
			if url, ok := strings.CutPrefix(line, "ingress endpoint listening on "); ok {
				return url, stop, errs
			}
		case code := <-done:
			t.Fatalf("serve exited %d before listening: %s", code, errs)
		case <-time.After(60 * time.Second):
			cancel()
			t.Fatalf("serve did not listen within 60s: %s", errs)
		}
	}
}

type delivery struct {
	status   int
	replayed string
	body     string
}

func deliver(t *testing.T, url string, h http.Header, body string) delivery {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return delivery{resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), string(b)}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestIngress: serve's webhook ingress takes GitHub, Stripe and generic
// HMAC deliveries once each (a redelivery gets the replay), with the
// outbox effect; a bad, missing or replayed-too-late signature gets 401,
// stores nothing and is counted on /metrics.
func TestIngress(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "inbox.db")
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ops := freeAddr(t)
	base, stop, errs := startIngress(t, "--db", db, "--no-purge", "--http-listen", ops, "--effect", "outbox", "--ingress-listen", "127.0.0.1:0",
		"--ingress", "name=github,key=header:X-GitHub-Delivery,signature=github,secret-file="+secret,
		"--ingress", "name=stripe,key=json:id,signature=stripe,secret-file="+secret,
		"--ingress", "name=shop,key=header:X-Shopify-Webhook-Id,signature=hmac:X-Shopify-Hmac-Sha256,encoding=base64,secret-file="+secret)
	defer func() {
		if code := stop(); code != clikit.ExitOK {
			t.Errorf("serve exited %d: %s", code, errs)
		}
	}()
	key := []byte("s3cret")
	gh := `{"action":"opened"}`
	ghHeader := http.Header{"X-Github-Delivery": {"d-1"}, "X-Hub-Signature-256": {"sha256=" + hex.EncodeToString(webhooksig.Sign(key, []byte(gh)))}}
	if d := deliver(t, base+"github", ghHeader, gh); d.status != 200 || d.replayed != "" {
		t.Fatalf("github: %+v", d)
	}
	if d := deliver(t, base+"github", ghHeader, gh); d.status != 200 || d.replayed != "true" {
		t.Fatalf("github redelivery: %+v", d)
	}
	bad := ghHeader.Clone()
	bad.Set("X-Github-Delivery", "d-2")
	if d := deliver(t, base+"github", bad, gh+" "); d.status != 401 || !strings.Contains(d.body, "bad-signature") {
		t.Fatalf("github, body changed: %+v", d)
	}
	bad.Del("X-Hub-Signature-256")
	if d := deliver(t, base+"github", bad, gh); d.status != 401 {
		t.Fatalf("github, unsigned: %+v", d)
	}

	ev := `{"id":"evt_1","type":"charge.succeeded"}`
	stripe := func(ts int64) http.Header {
		return http.Header{"Stripe-Signature": {fmt.Sprintf("t=%d,v1=%s", ts, hex.EncodeToString(webhooksig.Sign(key, []byte(fmt.Sprint(ts)+"."), []byte(ev))))}}
	}
	if d := deliver(t, base+"stripe", stripe(time.Now().Unix()), ev); d.status != 200 {
		t.Fatalf("stripe: %+v", d)
	}
	ev2 := strings.Replace(ev, "evt_1", "evt_2", 1)
	old := time.Now().Unix() - 400
	oldHeader := http.Header{"Stripe-Signature": {fmt.Sprintf("t=%d,v1=%s", old, hex.EncodeToString(webhooksig.Sign(key, []byte(fmt.Sprint(old)+"."), []byte(ev2))))}}
	if d := deliver(t, base+"stripe", oldHeader, ev2); d.status != 401 || !strings.Contains(d.body, "tolerance") {
		t.Fatalf("stripe, signed 400 s ago: %+v", d)
	}

	shop := `{"order":1}`
	shopHeader := http.Header{"X-Shopify-Webhook-Id": {"w-1"}, "X-Shopify-Hmac-Sha256": {base64.StdEncoding.EncodeToString(webhooksig.Sign(key, []byte(shop)))}}
	if d := deliver(t, base+"shop", shopHeader, shop); d.status != 200 {
		t.Fatalf("shop: %+v", d)
	}
	if d := deliver(t, base+"nowhere", shopHeader, shop); d.status != 404 {
		t.Fatalf("unknown route: %+v", d)
	}

	d, err := sqlitestore.Open(db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var rows int
	if err := d.DB().QueryRow(`SELECT count(*) FROM txinbox_outbox`).Scan(&rows); err != nil || rows != 3 {
		t.Fatalf("%d outbox rows (%v), want 3: one per delivery taken", rows, err)
	}
	resp, err := http.Get("http://" + ops + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`txinbox_ingress_signature_refused_total{reason="mismatch",route="github"} 1`,
		`txinbox_ingress_signature_refused_total{reason="missing",route="github"} 1`, `txinbox_ingress_signature_refused_total{reason="expired",route="stripe"} 1`,
		`txinbox_http_requests_total{event="replayed",route="github",status="200"} 1`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestIngressRoutesRefused: malformed --ingress routes are refused at
// start, naming what is wrong.
func TestIngressRoutesRefused(t *testing.T) {
	for _, c := range []struct{ route, want string }{
		{"name=Bad Name", "name="},
		{"name=a,key=cookie:x", "key="},
		{"name=a,signature=github", "secret"},
		{"name=a,signature=hmac,secret-env=X", "hmac:HEADER"},
		{"name=a,secret-env=X", "without a signature"},
		{"name=a,colour=red", "unknown setting"},
	} {
		_, errs, code := run(t, "serve", "--db", filepath.Join(t.TempDir(), "x.db"), "--ingress-listen", "127.0.0.1:0", "--ingress", c.route)
		if code != clikit.ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%q: code %d, %q", c.route, code, errs)
		}
	}
	_, errs, code := run(t, "serve", "--db", filepath.Join(t.TempDir(), "x.db"), "--ingress-listen", "127.0.0.1:0")
	if code != clikit.ExitUsage || !strings.Contains(errs, "--ingress") {
		t.Errorf("no route: code %d, %q", code, errs)
	}
}

// TestIngressFromConfig: the routes come from --config as a list of the
// same settings.
func TestIngressFromConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte("ingress-listen: 127.0.0.1:0\ningress:\n  - name=orders,key=idempotency-key\n  - name=events,key=json:id\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, stop, errs := startIngress(t, "--db", filepath.Join(dir, "inbox.db"), "--no-purge", "--config", cfg)
	defer stop()
	h := http.Header{"Idempotency-Key": {`"order-1"`}}
	if d := deliver(t, base+"orders", h, "{}"); d.status != 200 {
		t.Fatalf("orders: %+v %s", d, errs)
	}
	if d := deliver(t, base+"orders", h, "{}"); d.replayed != "true" {
		t.Fatalf("orders again: %+v", d)
	}
	if d := deliver(t, base+"events", nil, `{"id":"e1"}`); d.status != 200 {
		t.Fatalf("events: %+v", d)
	}
}
