package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/console"
	"github.com/txinbox/txinbox/store"
)

var admin = console.Auth{Users: map[string]string{"ops": "s3cret"}}

func TestPagesLoadReadOnlyWithoutCredentials(t *testing.T) {
	e := newEnv(t, console.Auth{})
	e.process(msg("inv-1", "A"))
	id := e.deadLetter("inv-2", "B")
	for _, p := range []string{"/ui/", "/ui/dead-letters", fmt.Sprintf("/ui/dead-letters/%d", id), "/ui/drift",
		"/ui/inspect?scope=invoices&id=inv-1", "/ui/outbox", "/ui/assets/console.css"} {
		code, body := e.get(p, nil)
		if code != http.StatusOK {
			t.Errorf("GET %s = %d: %s", p, code, body)
		}
		if strings.Contains(body, `method="post"`) {
			t.Errorf("GET %s offers an action without credentials configured", p)
		}
	}
	before := e.admin.scopeStats.Load()
	_, body := e.get("/ui/", nil)
	if n := e.admin.scopeStats.Load() - before; n != 1 {
		t.Errorf("the overview read the scope figures %d times, want once (one retention configured)", n)
	}
	for _, want := range []string{`<td class="ok">ready</td>`, `<td class="bad">connecting to the broker</td>`, `<td class="num">12</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the overview lacks the sources' readiness and lag %s", want)
		}
	}
	code, _ := e.post(fmt.Sprintf("/ui/dead-letters/%d/replay", id), url.Values{"reason": {"x"}}, nil)
	if code != http.StatusForbidden {
		t.Errorf("POST replay on a read-only console = %d, want 403", code)
	}
	if in, _ := e.driver.Inspect(e.ctx, store.Key{Scope: scope, MessageID: "inv-2"}); in.DeadLetter == nil {
		t.Error("a refused replay re-admitted the message")
	}
}

// TestDurationsInTxinboxSyntax: the overview writes a scope's retention
// as the CLI does (1d), not in Go's syntax (24h0m0s).
func TestDurationsInTxinboxSyntax(t *testing.T) {
	e := newEnv(t, console.Auth{}) // the scope's retention is 24h
	e.process(msg("inv-1", "A"))
	_, body := e.get("/ui/", nil)
	if !strings.Contains(body, `<td class="num">1d</td>`) || strings.Contains(body, "24h0m0s") {
		t.Errorf("the overview does not show the 1-day retention as 1d:\n%s", body)
	}
}

func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t, console.Auth{})
	resp, err := e.srv.Client().Get(e.srv.URL + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "script-src") {
		t.Errorf("Content-Security-Policy %q allows scripts", csp)
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Error("no X-Content-Type-Options: nosniff")
	}
}

func TestCredentialsAsked(t *testing.T) {
	e := newEnv(t, console.Auth{Token: "tok-123", Users: admin.Users})
	for _, tc := range []struct {
		name string
		auth func(*http.Request)
		want int
	}{
		{"none", nil, http.StatusUnauthorized},
		{"wrong password", basic("ops", "nope"), http.StatusUnauthorized},
		{"user", basic("ops", "s3cret"), http.StatusOK},
		{"token as password", basic("alice", "tok-123"), http.StatusOK},
		{"bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok-123") }, http.StatusOK},
		{"wrong bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok-12") }, http.StatusUnauthorized},
	} {
		if code, _ := e.get("/ui/", tc.auth); code != tc.want {
			t.Errorf("%s: GET /ui/ = %d, want %d", tc.name, code, tc.want)
		}
	}
}

func TestActionNeedsTokenAndOrigin(t *testing.T) {
	e := newEnv(t, admin)
	id := e.deadLetter("inv-1", "A")
	page := fmt.Sprintf("/ui/dead-letters/%d", id)
	_, body := e.get(page, basic("ops", "s3cret"))
	token := e.csrfOf(body)
	action := page + "/replay"
	if code, _ := e.post(action, url.Values{"reason": {"r"}}, basic("ops", "s3cret")); code != http.StatusForbidden {
		t.Errorf("replay without the form token = %d, want 403", code)
	}
	if code, _ := e.post(action, url.Values{"reason": {"r"}, "csrf": {token + "x"}}, basic("ops", "s3cret")); code != http.StatusForbidden {
		t.Errorf("replay with a wrong token = %d, want 403", code)
	}
	if code, _ := e.post(action, url.Values{"reason": {"r"}, "csrf": {token}}, nil); code != http.StatusUnauthorized {
		t.Errorf("replay without credentials = %d, want 401", code)
	}
	cross := func(r *http.Request) {
		r.SetBasicAuth("ops", "s3cret")
		r.Header.Set("Origin", "https://evil.example")
		r.Header.Set("Sec-Fetch-Site", "cross-site")
	}
	if code, _ := e.post(action, url.Values{"reason": {"r"}, "csrf": {token}}, cross); code != http.StatusForbidden {
		t.Errorf("replay from another origin = %d, want 403", code)
	}
	if code, _ := e.post(action, url.Values{"csrf": {token}}, basic("ops", "s3cret")); code != http.StatusBadRequest {
		t.Errorf("replay without a reason = %d, want 400", code)
	}
	if in, _ := e.driver.Inspect(e.ctx, store.Key{Scope: scope, MessageID: "inv-1"}); in.DeadLetter == nil {
		t.Fatal("a refused action re-admitted the message")
	}
	code, body := e.post(action, url.Values{"reason": {"partner fixed"}, "csrf": {token}}, basic("ops", "s3cret"))
	if code != http.StatusOK || !strings.Contains(body, "replayable") {
		t.Fatalf("replay with the token = %d: %s", code, body)
	}
	e.wantAudit("forget", "console:ops", "partner fixed")
}

func (e *env) wantAudit(action, actor, reason string) {
	e.t.Helper()
	var n int
	err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM `+e.schema+`.txinbox_audit WHERE action = $1 AND actor = $2 AND reason = $3`,
		action, actor, reason).Scan(&n)
	if err != nil || n != 1 {
		e.t.Errorf("audit rows (%s, %s, %s) = %d, %v; want 1", action, actor, reason, n, err)
	}
}

func TestHostilePayloadIsEscaped(t *testing.T) {
	e := newEnv(t, admin)
	hostile := `<script>document.title="pwned"</script><img src=x onerror=alert(1)>`
	id := e.deadLetter(`<script>alert("id")</script>`, hostile)
	for _, p := range []string{fmt.Sprintf("/ui/dead-letters/%d", id), "/ui/dead-letters",
		"/ui/inspect?scope=invoices&id=" + url.QueryEscape(`<script>alert("id")</script>`)} {
		_, body := e.get(p, basic("ops", "s3cret"))
		if strings.Contains(body, "<script") || strings.Contains(body, "<img") || strings.Contains(body, "<b>") {
			t.Errorf("GET %s renders stored text as HTML:\n%s", p, body)
		}
	}
	_, body := e.get(fmt.Sprintf("/ui/dead-letters/%d", id), basic("ops", "s3cret"))
	if !strings.Contains(body, "&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;") {
		t.Errorf("the payload is not shown as escaped text:\n%s", body)
	}
}

func TestReplayRules(t *testing.T) {
	e := newEnv(t, admin)
	stale := e.deadLetter("inv-stale", "S")
	// Another consumer committed the message after all: the dead letter
	// is stale, and a replay would run the effect a second time.
	e.exec(`INSERT INTO `+e.schema+`.txinbox_inbox (scope, message_id, payload_hash) VALUES ($1, $2, '\x00')`, scope, "inv-stale")
	_, body := e.get("/ui/dead-letters", basic("ops", "s3cret"))
	token := e.csrfOf(body)
	code, body := e.post(fmt.Sprintf("/ui/dead-letters/%d/replay", stale), url.Values{"reason": {"r"}, "csrf": {token}}, basic("ops", "s3cret"))
	if code != http.StatusConflict || !strings.Contains(body, "stale") {
		t.Errorf("replay of a stale dead letter = %d: %s", code, body)
	}
	e.fail.Store(true)
	e.process(msg("", "no id"))
	e.fail.Store(false)
	dls, _ := e.driver.ListDeadLetters(e.ctx, store.ListFilter{Limit: 1})
	code, _ = e.post(fmt.Sprintf("/ui/dead-letters/%d/replay", dls[0].ID), url.Values{"reason": {"r"}, "csrf": {token}}, basic("ops", "s3cret"))
	if code != http.StatusConflict {
		t.Errorf("replay of a dead letter without an id = %d, want 409", code)
	}
	code, _ = e.post(fmt.Sprintf("/ui/dead-letters/%d/drop", dls[0].ID), url.Values{"reason": {"junk"}, "csrf": {token}}, basic("ops", "s3cret"))
	if code != http.StatusOK {
		t.Errorf("drop = %d", code)
	}
	e.wantAudit("drop-dead-letter", "console:ops", "junk")
}

func TestBulkReplayOfAFilteredSet(t *testing.T) {
	e := newEnv(t, admin)
	for i := range 5 {
		e.deadLetter(fmt.Sprintf("inv-%d", i), "P")
	}
	other := msg("other-1", "O")
	other.Source = "other-queue"
	e.fail.Store(true)
	e.process(other)
	e.fail.Store(false)
	_, body := e.get("/ui/dead-letters?source=invoices-queue", basic("ops", "s3cret"))
	form := url.Values{"csrf": {e.csrfOf(body)}, "action": {"replay"}, "reason": {"partner back"}, "source": {"invoices-queue"}}
	reads := e.admin.getDeadLetter.Load()
	code, body := e.post("/ui/dead-letters", form, basic("ops", "s3cret"))
	if code != http.StatusOK || !strings.Contains(body, "5 done, 0 refused, 0 failed") {
		t.Fatalf("bulk replay = %d: %s", code, body)
	}
	if n := e.admin.getDeadLetter.Load() - reads; n != 0 {
		t.Errorf("the bulk replay read %d dead letters again after listing them, want 0", n)
	}
	for i := range 5 {
		if out := e.process(msg(fmt.Sprintf("inv-%d", i), "P")); out[0] != txinbox.Processed {
			t.Errorf("inv-%d after the bulk replay: %v, want processed", i, out[0])
		}
		if n := e.effects(fmt.Sprintf("inv-%d", i)); n != 1 {
			t.Errorf("inv-%d has %d effects after the bulk replay, want 1", i, n)
		}
	}
	if in, _ := e.driver.Inspect(e.ctx, store.Key{Scope: scope, MessageID: "other-1"}); in.DeadLetter == nil {
		t.Error("the bulk replay touched a dead letter outside its filter")
	}
}

// TestBulkDropOfAFilteredSet: a filtered drop hides every matching dead
// letter, reading none of them again after the listing; a second drop of
// the same filter finds nothing.
func TestBulkDropOfAFilteredSet(t *testing.T) {
	e := newEnv(t, admin)
	for i := range 3 {
		e.deadLetter(fmt.Sprintf("junk-%d", i), "J")
	}
	_, body := e.get("/ui/dead-letters", basic("ops", "s3cret"))
	form := url.Values{"csrf": {e.csrfOf(body)}, "action": {"drop"}, "reason": {"junk"}}
	reads := e.admin.getDeadLetter.Load()
	code, body := e.post("/ui/dead-letters", form, basic("ops", "s3cret"))
	if code != http.StatusOK || !strings.Contains(body, "3 done, 0 refused, 0 failed") {
		t.Fatalf("bulk drop = %d: %s", code, body)
	}
	if n := e.admin.getDeadLetter.Load() - reads; n != 0 {
		t.Errorf("the bulk drop read %d dead letters again after listing them, want 0", n)
	}
	if dls, err := e.driver.ListDeadLetters(e.ctx, store.ListFilter{Scope: scope}); err != nil || len(dls) != 0 {
		t.Errorf("after the bulk drop: %d dead letters listed (%v), want 0", len(dls), err)
	}
	if code, body := e.post("/ui/dead-letters", form, basic("ops", "s3cret")); code != http.StatusOK ||
		!strings.Contains(body, "0 done, 0 refused, 0 failed") {
		t.Errorf("a second bulk drop = %d: %s", code, body)
	}
	var audited int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM `+e.schema+`.txinbox_audit WHERE action = 'drop-dead-letter'
		AND actor = 'console:ops' AND reason = 'junk'`).Scan(&audited); err != nil || audited != 3 {
		t.Errorf("audit rows of the bulk drop = %d, %v; want 3", audited, err)
	}
}

var nextRE = regexp.MustCompile(`id="next" href="([^"]+)"`)

// TestDeadLetterPagesFollowTheKey follows the "Older" links through 120
// dead letters of two sources, filtered to one: every row once, newest
// first, in pages of 50.
func TestDeadLetterPagesFollowTheKey(t *testing.T) {
	e := newEnv(t, console.Auth{})
	e.exec(`INSERT INTO `+e.schema+`.txinbox_dead_letters (scope, message_id, source, payload, payload_hash, attempts, reason, last_error,
		received_at) SELECT $1, 'm-' || g, CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END, 'p', '\x00', 1, 'r', 'e', now()
		FROM generate_series(1, 240) g`, scope)
	path, seen, pages := "/ui/dead-letters?source=a", map[string]bool{}, 0
	last := 1 << 30
	for path != "" {
		code, body := e.get(strings.ReplaceAll(path, "&amp;", "&"), nil)
		if code != http.StatusOK {
			t.Fatalf("GET %s = %d", path, code)
		}
		pages++
		for _, m := range regexp.MustCompile(`>m-(\d+)<`).FindAllStringSubmatch(body, -1) {
			n, _ := strconv.Atoi(m[1])
			if seen[m[1]] || n >= last || n%2 != 0 {
				t.Errorf("page %d: m-%s repeated, out of order or of another source", pages, m[1])
			}
			seen[m[1]], last = true, n
		}
		path = ""
		if m := nextRE.FindStringSubmatch(body); m != nil {
			path = m[1]
		}
	}
	if len(seen) != 120 || pages != 3 {
		t.Errorf("followed %d pages showing %d dead letters, want 3 pages and 120", pages, len(seen))
	}
}

// TestTokenActorIsNotAUser: the token given as a basic-auth password is
// audited as "token:NAME", so a client that knows the token cannot act in
// the name of a configured user.
func TestTokenActorIsNotAUser(t *testing.T) {
	e := newEnv(t, console.Auth{Token: "tok-123", Users: admin.Users})
	id := e.deadLetter("inv-tok", "A")
	page := fmt.Sprintf("/ui/dead-letters/%d", id)
	_, body := e.get(page, basic("ops", "tok-123"))
	code, body := e.post(page+"/drop", url.Values{"reason": {"junk"}, "csrf": {e.csrfOf(body)}}, basic("ops", "tok-123"))
	if code != http.StatusOK {
		t.Fatalf("drop with the token = %d: %s", code, body)
	}
	e.wantAudit("drop-dead-letter", "console:token:ops", "junk")
}
