package httpinbox_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/httpinbox"
	"github.com/txinbox/txinbox/store"
)

// answer is a response as the client saw it.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) problem(t *testing.T) httpinbox.Problem {
	t.Helper()
	if ct := a.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json (status %d, body %s)", ct, a.status, a.body)
	}
	var p httpinbox.Problem
	if err := json.Unmarshal(a.body, &p); err != nil || p.Status != a.status || p.Type == "" || p.Title == "" {
		t.Fatalf("problem body %s (%v): want type, title and status %d", a.body, err, a.status)
	}
	return p
}

// post sends body to url with the given header lines ("Name: value").
func post(t *testing.T, url, body string, headers ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Add(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

func TestHTTP(t *testing.T) {
	runCases(t, []storeCase{
		{"ReplayByteForByte", testReplay[pgx.Tx], testReplay[*sql.Tx]},
		{"MismatchIs422WithDrift", testMismatch[pgx.Tx], testMismatch[*sql.Tx]},
		{"MissingAndHostileKeys", testKeys[pgx.Tx], testKeys[*sql.Tx]},
		{"FailureStoresNothing", testFailure[pgx.Tx], testFailure[*sql.Tx]},
		{"FourXXReplayed", testFourXX[pgx.Tx], testFourXX[*sql.Tx]},
		{"DeadLetteredIs422", testDeadLettered[pgx.Tx], testDeadLettered[*sql.Tx]},
		{"ScopedByCaller", testScoping[pgx.Tx], testScoping[*sql.Tx]},
		{"HundredConcurrentOneKey", testHundred[pgx.Tx], testHundred[*sql.Tx]},
		{"HostileBodies", testBodies[pgx.Tx], testBodies[*sql.Tx]},
		{"OwnPrincipalPerRequest", testPrincipals[pgx.Tx], testPrincipals[*sql.Tx]},
		{"SlowBodyHoldsNoTransaction", testSlowBody[pgx.Tx], testSlowBody[*sql.Tx]},
		{"KeyFromHeaderAndJSON", testOtherKeys[pgx.Tx], testOtherKeys[*sql.Tx]},
	})
}

func testReplay[TTx any](t *testing.T, e *env[TTx]) {
	srv := e.route(e.inbox(httpinbox.Config[TTx]{}), httpinbox.Route[TTx]{Name: "orders"}, e.orders())
	first := post(t, srv.URL+"/orders?x=1", "book", `Idempotency-Key: "k-1"`)
	if first.status != http.StatusCreated || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %v %s", first.status, first.header, first.body)
	}
	for range 2 {
		again := post(t, srv.URL+"/orders?x=1", "book", `Idempotency-Key: "k-1"`)
		if again.status != first.status || !bytes.Equal(again.body, first.body) ||
			again.header.Get("X-Order-Id") != first.header.Get("X-Order-Id") ||
			again.header.Get("Content-Type") != first.header.Get("Content-Type") {
			t.Errorf("replay %d %v %q, want %d %q", again.status, again.header, again.body, first.status, first.body)
		}
		if again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay without Idempotent-Replayed: true: %v", again.header)
		}
	}
	if got := e.effects(); got["book"] != 1 || len(got) != 1 {
		t.Errorf("effects %v, want book once", got)
	}
}

func testMismatch[TTx any](t *testing.T, e *env[TTx]) {
	srv := e.route(e.inbox(httpinbox.Config[TTx]{}), httpinbox.Route[TTx]{Name: "orders", FingerprintHeaders: []string{"X-Currency"}}, e.orders())
	post(t, srv.URL, "book", `Idempotency-Key: "k-1"`, "X-Currency: EUR")
	for _, other := range []struct{ url, body, cur string }{
		{srv.URL, "two books", "EUR"}, {srv.URL + "/other", "book", "EUR"}, {srv.URL, "book", "USD"}, {srv.URL + "?q=1", "book", "EUR"},
	} {
		a := post(t, other.url, other.body, `Idempotency-Key: "k-1"`, "X-Currency: "+other.cur)
		if a.status != http.StatusUnprocessableEntity {
			t.Fatalf("%+v: %d %s, want 422", other, a.status, a.body)
		}
		if p := a.problem(t); !strings.HasSuffix(p.Type, "#key-reused") || p.Key != "k-1" {
			t.Errorf("problem %+v", p)
		}
	}
	drift, err := e.driver.(store.Admin).ListDrift(context.Background(), store.ListFilter{})
	if err != nil || len(drift) != 4 {
		t.Errorf("drift rows %d (%v), want 4", len(drift), err)
	}
	if got := e.effects(); got["book"] != 1 || len(got) != 1 {
		t.Errorf("effects %v", got)
	}
}

func testKeys[TTx any](t *testing.T, e *env[TTx]) {
	srv := e.route(e.inbox(httpinbox.Config[TTx]{}), httpinbox.Route[TTx]{Name: "orders"}, e.orders())
	a := post(t, srv.URL, "book")
	if a.status != http.StatusBadRequest {
		t.Fatalf("no key: %d %s", a.status, a.body)
	}
	if p := a.problem(t); p.Type != httpinbox.DefaultDocsURL+"#missing-key" {
		t.Errorf("missing key's problem type %q", p.Type)
	}
	for name, lines := range map[string][]string{
		"empty string":     {`Idempotency-Key: ""`},
		"empty field":      {`Idempotency-Key: `},
		"10 kB":            {`Idempotency-Key: "` + strings.Repeat("k", 10<<10) + `"`},
		"256 bytes":        {`Idempotency-Key: "` + strings.Repeat("k", 256) + `"`},
		"token":            {`Idempotency-Key: abc`},
		"unclosed":         {`Idempotency-Key: "abc`},
		"two fields":       {`Idempotency-Key: "a"`, `Idempotency-Key: "a"`},
		"list":             {`Idempotency-Key: "a", "b"`},
		"non-ASCII":        {"Idempotency-Key: \"caf\u00e9\""},
		"tab inside":       {"Idempotency-Key: \"a\tb\""},
		"bad escape":       {`Idempotency-Key: "a\nb"`},
		"bad parameter":    {`Idempotency-Key: "a";B=1`},
		"integer":          {`Idempotency-Key: 42`},
		"byte sequence":    {`Idempotency-Key: :YWJj:`},
		"trailing garbage": {`Idempotency-Key: "a" x`},
	} {
		a := post(t, srv.URL, "book", lines...)
		if a.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", name, a.status, a.body)
			continue
		}
		if p := a.problem(t); !strings.HasSuffix(p.Type, "#invalid-key") {
			t.Errorf("%s: problem %+v", name, p)
		}
	}
	// Parameters are parsed and ignored: the same key.
	first := post(t, srv.URL, "book", `Idempotency-Key: "p-1";v=1;ttl=3600`)
	again := post(t, srv.URL, "book", `Idempotency-Key: "p-1"`)
	if first.status != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.body, again.body) {
		t.Errorf("key with parameters: %d, then %d %v", first.status, again.status, again.header)
	}
	if got := e.effects(); got["book"] != 1 || len(got) != 1 {
		t.Errorf("effects %v, want one", got)
	}
}

func testFailure[TTx any](t *testing.T, e *env[TTx]) {
	var calls atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tx, _ := httpinbox.TxFromContext[TTx](r.Context())
		if _, err := e.effect(r.Context(), tx, "attempt"); err != nil {
			t.Error(err)
		}
		switch calls.Add(1) {
		case 1:
			http.Error(w, "database busy", http.StatusServiceUnavailable)
		case 2:
			panic("handler bug")
		default:
			w.WriteHeader(http.StatusCreated)
		}
	})
	srv := e.route(e.inbox(httpinbox.Config[TTx]{}), httpinbox.Route[TTx]{Name: "orders"}, h)
	if a := post(t, srv.URL, "x", `Idempotency-Key: "f"`); a.status != http.StatusServiceUnavailable || string(a.body) != "database busy\n" {
		t.Errorf("first: %d %q, want the handler's own 503", a.status, a.body)
	}
	if a := post(t, srv.URL, "x", `Idempotency-Key: "f"`); a.status != http.StatusInternalServerError || !strings.HasSuffix(a.problem(t).Type, "#failed") {
		t.Errorf("second (panic): %d %s", a.status, a.body)
	}
	if a := post(t, srv.URL, "x", `Idempotency-Key: "f"`); a.status != http.StatusCreated || a.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("third: %d %v, want a fresh 201", a.status, a.header)
	}
	if a := post(t, srv.URL, "x", `Idempotency-Key: "f"`); a.status != http.StatusCreated || a.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("fourth: %d %v, want the replay", a.status, a.header)
	}
	if got := e.effects(); got["attempt"] != 1 {
		t.Errorf("effects %v: the failed attempts' effects committed", got)
	}
}

func testFourXX[TTx any](t *testing.T, e *env[TTx]) {
	var calls atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path == "/busy" {
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		http.Error(w, "amount must be positive", http.StatusBadRequest)
	})
	srv := e.route(e.inbox(httpinbox.Config[TTx]{}), httpinbox.Route[TTx]{Name: "orders"}, h)
	first := post(t, srv.URL, "x", `Idempotency-Key: "v"`)
	again := post(t, srv.URL, "x", `Idempotency-Key: "v"`)
	if first.status != 400 || again.status != 400 || again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.body, again.body) {
		t.Errorf("400: %d then %d %v", first.status, again.status, again.header)
	}
	post(t, srv.URL+"/busy", "x", `Idempotency-Key: "b"`)
	if a := post(t, srv.URL+"/busy", "x", `Idempotency-Key: "b"`); a.status != 429 || a.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("429 again: %d %v, want the handler run again", a.status, a.header)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("handler ran %d times, want 3 (400 once, 429 twice)", n)
	}
}

func testDeadLettered[TTx any](t *testing.T, e *env[TTx]) {
	var calls atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "upstream down", http.StatusBadGateway)
	})
	srv := e.route(e.inbox(httpinbox.Config[TTx]{MaxAttempts: 2}), httpinbox.Route[TTx]{Name: "orders"}, h)
	for i := range 2 {
		if a := post(t, srv.URL, "x", `Idempotency-Key: "d"`); a.status != http.StatusBadGateway {
			t.Errorf("attempt %d: %d %s, want the handler's 502", i+1, a.status, a.body)
		}
	}
	a := post(t, srv.URL, "x", `Idempotency-Key: "d"`)
	if a.status != http.StatusUnprocessableEntity || !strings.HasSuffix(a.problem(t).Type, "#dead-lettered") {
		t.Errorf("after MaxAttempts: %d %s, want 422 dead-lettered", a.status, a.body)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("handler ran %d times, want 2", n)
	}
}

func testScoping[TTx any](t *testing.T, e *env[TTx]) {
	in := e.inbox(httpinbox.Config[TTx]{})
	rt := httpinbox.Route[TTx]{Name: "orders", Identity: func(r *http.Request) (string, error) {
		if c := r.Header.Get("X-Client"); c != "" {
			return c, nil
		}
		return "", errors.New("no client")
	}}
	rh, err := in.Handler(rt, e.orders())
	if err != nil {
		t.Fatal(err)
	}
	// The identity is in the context too: the handler keys its effect
	// by it.
	srv := e.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rh.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, r.Header.Get("X-Client"))))
	}))
	a := post(t, srv.URL, "book", `Idempotency-Key: "shared"`, "X-Client: alice")
	b := post(t, srv.URL, "book", `Idempotency-Key: "shared"`, "X-Client: bob")
	if a.status != 201 || b.status != 201 || b.header.Get("Idempotent-Replayed") != "" || bytes.Contains(b.body, []byte("alice")) {
		t.Errorf("bob with alice's key: %d %v %s (alice: %s)", b.status, b.header, b.body, a.body)
	}
	if got := e.effects(); got["alice:book"] != 1 || got["bob:book"] != 1 {
		t.Errorf("effects %v", got)
	}
	if c := post(t, srv.URL, "book", `Idempotency-Key: "shared"`); c.status != http.StatusUnauthorized {
		t.Errorf("no identity: %d", c.status)
	}
}

func testHundred[TTx any](t *testing.T, e *env[TTx]) {
	srv := e.route(e.inbox(httpinbox.Config[TTx]{}), httpinbox.Route[TTx]{Name: "orders"}, e.orders())
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	var created []byte
	for range 100 {
		wg.Go(func() {
			a := post(t, srv.URL, "book", `Idempotency-Key: "hot"`)
			mu.Lock()
			defer mu.Unlock()
			kind := fmt.Sprint(a.status)
			if a.header.Get("Idempotent-Replayed") == "true" {
				kind += " replay"
			}
			counts[kind]++
			if a.status == 201 && a.header.Get("Idempotent-Replayed") == "" {
				created = a.body
			}
		})
	}
	wg.Wait()
	if counts["201"] != 1 || counts["201"]+counts["201 replay"]+counts["409"] != 100 {
		t.Errorf("answers %v: want one 201, the rest 409 or replays", counts)
	}
	if a := post(t, srv.URL, "book", `Idempotency-Key: "hot"`); !bytes.Equal(a.body, created) {
		t.Errorf("replay %s, want %s", a.body, created)
	}
	if got := e.effects(); got["book"] != 1 {
		t.Errorf("effects %v, want one", got)
	}
}

func testBodies[TTx any](t *testing.T, e *env[TTx]) {
	srv := e.route(e.inbox(httpinbox.Config[TTx]{}), httpinbox.Route[TTx]{Name: "orders", MaxBodyBytes: 1000, MaxReplyBytes: 64}, e.orders())
	if a := post(t, srv.URL, strings.Repeat("b", 1001), `Idempotency-Key: "big"`); a.status != http.StatusRequestEntityTooLarge {
		t.Errorf("large body: %d", a.status)
	}
	// A chunked body (no Content-Length) over the limit.
	req, _ := http.NewRequest(http.MethodPost, srv.URL, io.MultiReader(strings.NewReader(strings.Repeat("c", 600)), strings.NewReader(strings.Repeat("c", 600))))
	req.Header.Set("Idempotency-Key", `"chunked"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked large body: %d", resp.StatusCode)
	}
	// A reply over MaxReplyBytes: nothing commits.
	if a := post(t, srv.URL, strings.Repeat("r", 80), `Idempotency-Key: "long-reply"`); a.status != 500 || !strings.Contains(a.problem(t).Detail, "limit of 64") {
		t.Errorf("long reply: %d %s", a.status, a.body)
	}
	truncated(t, srv.URL)
	if got := e.effects(); len(got) != 0 {
		t.Errorf("effects %v, want none", got)
	}
}

func testPrincipals[TTx any](t *testing.T, e *env[TTx]) {
	// One transaction slot: requests share batches; each handler must
	// see its own request's principal.
	in := e.inbox(httpinbox.Config[TTx]{Concurrency: 1, MaxBatchSize: 8})
	rh, err := in.Handler(httpinbox.Route[TTx]{Name: "orders", Identity: func(r *http.Request) (string, error) {
		return r.Header.Get("X-Client"), nil
	}}, e.orders())
	if err != nil {
		t.Fatal(err)
	}
	srv := e.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rh.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, r.Header.Get("X-Client"))))
	}))
	var wg sync.WaitGroup
	for i := range 40 {
		who := fmt.Sprint("client-", i%8)
		wg.Go(func() {
			a := post(t, srv.URL, fmt.Sprint("item-", i), fmt.Sprintf(`Idempotency-Key: "k-%d"`, i), "X-Client: "+who)
			if !bytes.Contains(a.body, []byte(fmt.Sprintf(`"for":"%s:item-%d"`, who, i))) {
				t.Errorf("%s's request %d answered %d %s", who, i, a.status, a.body)
			}
		})
	}
	wg.Wait()
}

func testOtherKeys[TTx any](t *testing.T, e *env[TTx]) {
	in := e.inbox(httpinbox.Config[TTx]{})
	gh := e.route(in, httpinbox.Route[TTx]{Name: "github", Key: httpinbox.HeaderKey("X-GitHub-Delivery")}, e.orders())
	js := e.route(in, httpinbox.Route[TTx]{Name: "stripe", Key: httpinbox.JSONFieldKey("id")}, e.orders())
	post(t, gh.URL, "push", "X-GitHub-Delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958")
	if a := post(t, gh.URL, "push", "X-GitHub-Delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958"); a.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("GitHub redelivery: %d %v", a.status, a.header)
	}
	if a := post(t, gh.URL, "push", "X-GitHub-Delivery: a", "X-GitHub-Delivery: b"); a.status != 400 {
		t.Errorf("two delivery headers: %d", a.status)
	}
	ev := `{"id":"evt_1","type":"charge.succeeded"}`
	post(t, js.URL, ev)
	if a := post(t, js.URL, ev); a.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("Stripe redelivery: %d %v", a.status, a.header)
	}
	for _, bad := range []string{`{"id":42}`, `[1]`, `{"id":""}`} {
		if a := post(t, js.URL, bad); a.status != 400 {
			t.Errorf("%s: %d", bad, a.status)
		}
	}
	if a := post(t, js.URL, `{"type":"x"}`); a.status != 400 || !strings.HasSuffix(a.problem(t).Type, "#missing-key") {
		t.Errorf("no id: %d %s", a.status, a.body)
	}
	if got := e.effects(); got["push"] != 1 || got[ev] != 1 {
		t.Errorf("effects %v", got)
	}
}

// testSlowBody: a body that trickles in holds no transaction slot: with
// one slot, another request is answered while the slow one still sends.
func testSlowBody[TTx any](t *testing.T, e *env[TTx]) {
	srv := e.route(e.inbox(httpinbox.Config[TTx]{Concurrency: 1, MaxBatchSize: 1}), httpinbox.Route[TTx]{Name: "orders"}, e.orders())
	pr, pw := io.Pipe()
	slow := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, pr)
		req.Header.Set("Idempotency-Key", `"slow"`)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			slow <- 0
			return
		}
		resp.Body.Close()
		slow <- resp.StatusCode
	}()
	if _, err := pw.Write([]byte("sl")); err != nil {
		t.Fatal(err)
	}
	done := make(chan answer, 1)
	go func() { done <- post(t, srv.URL, "quick", `Idempotency-Key: "quick"`) }()
	select {
	case a := <-done:
		if a.status != http.StatusCreated {
			t.Errorf("quick request: %d %s", a.status, a.body)
		}
	case <-time.After(20 * time.Second):
		t.Error("a request waited behind a slow body")
	}
	pw.Write([]byte("ow")) //nolint:errcheck
	pw.Close()
	if st := <-slow; st != http.StatusCreated {
		t.Errorf("slow request: %d", st)
	}
	if got := e.effects(); got["slow"] != 1 || got["quick"] != 1 {
		t.Errorf("effects %v", got)
	}
}
