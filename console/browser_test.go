package console_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store"
)

// browser starts headless Chromium for one test, sending the console's
// credentials with every request. Without Chromium the test skips, except
// under CI=true where it fails.
func browser(t *testing.T, user, pass string) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		msg := "no chromium on PATH (apt-get install -y -q chromium): the browser tests need it"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	auth := network.Headers{"Authorization": "Basic " + basicToken(user, pass)}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: auth}); err != nil {
		t.Fatalf("setting the credentials: %v", err)
	}
	return ctx
}

// screenshot writes the page as docs/console/NAME.png when
// TXINBOX_UPDATE_SCREENSHOTS=1, so ordinary runs leave the tree alone.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("TXINBOX_UPDATE_SCREENSHOTS") != "1" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join("..", "docs", "console", name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// must runs a browser action and returns its value, failing the test on
// an error.
func must[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// open navigates to a console page and waits for an element of it.
func open(t *testing.T, ctx context.Context, e browsed, path string, wait chromedp.CSS) {
	t.Helper()
	must(t, ctx, "open "+path, chromedp.Steps(chromedp.Navigate(e.url()+path), chromedp.WaitVisible(wait)))
}

// browsed is a console over a real database that TestBrowser drives:
// env (PostgreSQL) and myEnv (MySQL, MariaDB).
type browsed interface {
	// url is the console's server.
	url() string
	// seed fills the inbox (see env.seed).
	seed()
	deadLetter(id, payload string) int64
	process(msgs ...*txinbox.Message) []txinbox.Outcome
	effects(id string) int
	// deadLettered reports whether the scope's message id has a dead letter.
	deadLettered(id string) bool
	wantAudit(action, actor, reason string)
	// httpKey stores an HTTP idempotency key's answer; false when the
	// store keeps none (store.ReplyLister).
	httpKey(route, key string) bool
}

func (e *env) url() string { return e.srv.URL }

func (e *env) deadLettered(id string) bool {
	in, _ := e.driver.Inspect(e.ctx, store.Key{Scope: scope, MessageID: id})
	return in.DeadLetter != nil
}

func TestBrowser(t *testing.T) {
	e := newEnv(t, admin)
	ctx := browser(t, "ops", "s3cret")
	browse(t, ctx, e)
}

// browse drives the console of e through Chromium: the overview's chart,
// a hostile payload shown as text, a form without its token refused, a
// replay through the page, every page, the AS4 list and the HTTP keys.
func browse(t *testing.T, ctx context.Context, e browsed) {
	e.seed()
	hostile := e.deadLetter("inv-hostile", `<script>document.title="pwned";window.pwned=1</script>UNB+UNOC:3`)
	dead := e.deadLetter("inv-42", ediSample)

	// The overview loads and its chart draws: bars, each a data point.
	open(t, ctx, e, "/ui/", "svg.chart")
	if bars := must(t, ctx, "bars", chromedp.Evaluate[int](`document.querySelectorAll("svg.chart rect.bar[data-count]").length`)); bars < 10 {
		t.Errorf("the chart draws %d bars, want the seeded minutes", bars)
	}
	screenshot(t, ctx, "overview")

	// A payload holding <script> is shown as text and does not run.
	open(t, ctx, e, fmt.Sprintf("/ui/dead-letters/%d", hostile), "#payload-text")
	title := must(t, ctx, "title", chromedp.Title())
	shown := must(t, ctx, "payload text", chromedp.Text(chromedp.CSS("#payload-text")))
	if pwned := must(t, ctx, "window.pwned", chromedp.Evaluate[bool](`window.pwned === 1`)); pwned || strings.Contains(title, "pwned") {
		t.Errorf("the stored payload ran as script (title %q)", title)
	}
	if !strings.Contains(shown, `<script>document.title="pwned"`) {
		t.Errorf("the payload is not shown as text: %q", shown)
	}

	// An action without the form token is refused, even posted by the
	// browser from the console's own page with the credentials.
	must(t, ctx, "post without token", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const f = document.createElement("form"); f.method = "post"; f.action = "/ui/dead-letters/%d/replay";
		const r = document.createElement("input"); r.name = "reason"; r.value = "no token"; f.appendChild(r);
		document.body.appendChild(f); f.submit(); })()`, dead)))
	must(t, ctx, "refusal", chromedp.WaitNotPresent(chromedp.CSS("#payload-text")))
	if body := must(t, ctx, "refusal text", chromedp.Evaluate[string](`document.body.innerText`)); !strings.Contains(body, "Forbidden: the form's token is missing") {
		t.Errorf("a form posted without the token was answered %q, want 403 Forbidden", body)
	}
	if !e.deadLettered("inv-42") {
		t.Fatal("a form without the token re-admitted the message")
	}

	open(t, ctx, e, "/ui/dead-letters", "#dead-letters")
	screenshot(t, ctx, "dead-letters")

	// A replay through the page re-admits the message: the next delivery
	// is processed, once.
	open(t, ctx, e, fmt.Sprintf("/ui/dead-letters/%d", dead), "#edi")
	screenshot(t, ctx, "dead-letter")
	must(t, ctx, "replay", chromedp.Steps(
		chromedp.SendKeys(chromedp.CSS(`#replay input[name=reason]`), "partner fixed its master data"),
		chromedp.Click(chromedp.CSS(`#replay button`)), chromedp.WaitVisible(chromedp.CSS("#result"))))
	if result := must(t, ctx, "result", chromedp.Text(chromedp.CSS("#result"))); !strings.Contains(result, "replayable") {
		t.Fatalf("replay through the page answered %q", result)
	}
	if out := e.process(msg("inv-42", ediSample)); out[0] != txinbox.Processed {
		t.Errorf("the delivery after the replay: %v, want processed", out[0])
	}
	if out := e.process(msg("inv-42", ediSample)); out[0] != txinbox.Duplicate {
		t.Errorf("the next delivery: %v, want duplicate", out[0])
	}
	if n := e.effects("inv-42"); n != 1 {
		t.Errorf("inv-42 has %d effects, want 1", n)
	}
	e.wantAudit("forget", "console:ops", "partner fixed its master data")

	for _, p := range []struct {
		name, path string
		wait       chromedp.CSS
	}{
		{"drift", "/ui/drift", "#drift"},
		{"inspect", "/ui/inspect?scope=invoices&id=inv-1", "#inspection"},
		{"outbox", "/ui/outbox", "#outbox-failed"},
		{"as4", "/ui/as4", "#as4"},
	} {
		open(t, ctx, e, p.path, p.wait)
		screenshot(t, ctx, p.name)
	}
	if as4 := must(t, ctx, "AS4 list", chromedp.Text(chromedp.CSS("#as4"))); !strings.Contains(as4, "msg-1@partner-a") || !strings.Contains(as4, "receipt-1@txinbox") {
		t.Errorf("the AS4 page lacks the stored message and its receipt: %q", as4)
	}

	// The HTTP keys: a route's key with its stored status, and its
	// inspection with the stored answer.
	if !e.httpKey("orders", "o-1") {
		return
	}
	open(t, ctx, e, "/ui/http-keys", "#route-orders")
	screenshot(t, ctx, "http-keys")
	if keys := must(t, ctx, "HTTP keys", chromedp.Text(chromedp.CSS("#route-orders"))); !strings.Contains(keys, "/o-1") || !strings.Contains(keys, "201") {
		t.Errorf("the HTTP keys page lacks the key and its status: %q", keys)
	}
	must(t, ctx, "inspect the key", chromedp.Steps(chromedp.Click(chromedp.CSS(`#route-orders a`)), chromedp.WaitVisible(chromedp.CSS("#answer"))))
	if answer := must(t, ctx, "answer", chromedp.Text(chromedp.CSS("#answer"))); !strings.Contains(answer, "status 201") {
		t.Errorf("the inspection shows %q, want the stored status 201", answer)
	}
}

// ediSample is an EDIFACT interchange, for the parsed envelope and key.
const ediSample = "UNA:+.? 'UNB+UNOC:3+SENDER1:14+RECEIVER1:14+261201:1200+INV42++INVOIC'" +
	"UNH+1+INVOIC:D:96A:UN'BGM+380+42+9'UNT+3+1'UNZ+1+INV42'"

func basicToken(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

// seed fills the inbox the way an hour of traffic would: messages
// processed by the processor, a drift, and older rows spread over the
// last hour (written directly, with their times), an outbox row that
// failed for good and an AS4 message with its receipt.
func (e *env) seed() {
	e.t.Helper()
	for i := range 3 {
		e.process(msg(fmt.Sprintf("inv-%d", i+1), "payload"))
	}
	e.process(msg("inv-1", "another payload")) // drift
	s := e.schema
	e.exec(`INSERT INTO `+s+`.txinbox_inbox (scope, message_id, source, payload_hash, received_at, processed_at)
		SELECT $1, 'hist-' || g, CASE WHEN g % 3 = 0 THEN 'orders-queue' ELSE 'invoices-queue' END, '\x00',
		       now() - (g % 58) * interval '1 minute' - interval '30 seconds', now()
		FROM generate_series(1, 1200) g WHERE (g % 58) % 7 <> 3`, scope)
	e.exec(`INSERT INTO `+s+`.txinbox_dead_letters (scope, message_id, source, payload, payload_hash, attempts, reason, last_error,
		received_at, dead_lettered_at)
		SELECT $1, 'old-' || g, 'invoices-queue', 'old payload', '\x00', 5, 'too many attempts', 'partner endpoint refused',
		       now() - g * interval '7 minutes', now() - g * interval '7 minutes'
		FROM generate_series(1, 6) g`, scope)
	e.exec(`INSERT INTO `+s+`.txinbox_outbox (scope, message_id, part, topic, key, payload, attempts, last_error, failed_at)
		VALUES ($1, 'inv-1', 0, 'erp.invoices', 'partner-7', 'x', 8, 'target refused: 422 unknown partner', now())`, scope)
	e.exec(`INSERT INTO ` + s + `.txinbox_as4_messages VALUES ('as4', 'PartyA|urn:oasis:names:tc:ebcore:partyid-type:unregistered|msg-1@partner-a',
		'msg-1@partner-a', '', '2026-12-01T10:00:00Z', 'PartyA', '', 'PartyB', '', 'urn:invoice', '', 'Deliver', 'conv-1', '1.2',
		'<eb:UserMessage/>', '\x00', 'receipt-1@txinbox', 'application/soap+xml',
		convert_to('<S12:Envelope><eb:Receipt>non-repudiation</eb:Receipt></S12:Envelope>', 'UTF8'), now())`)
}
