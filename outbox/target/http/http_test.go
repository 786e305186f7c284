package http_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/txinbox/txinbox/outbox"
	outboxhttp "github.com/txinbox/txinbox/outbox/target/http"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type seen struct {
	method, contentType, key, custom, auth string
	body                                   string
}

func TestSend(t *testing.T) {
	var mu sync.Mutex
	var got []seen
	status, retryAfter, answer := 200, "", "received"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.Header.Get("Content-Type"), r.Header.Get("Idempotency-Key"),
			r.Header.Get("X-Custom"), r.Header.Get("Authorization"), string(b)})
		st, ra, a := status, retryAfter, answer
		mu.Unlock()
		if ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		w.WriteHeader(st)
		io.WriteString(w, a)
	}))
	defer srv.Close()
	defer srv.CloseClientConnections()
	tg, err := outboxhttp.New(outboxhttp.Config{URL: srv.URL + "/in", Header: http.Header{"Authorization": {"Bearer x"}}, MaxReceipt: 4})
	if err != nil {
		t.Fatal(err)
	}
	m := &outbox.Message{Scope: "s", MessageID: "m", Part: 1, ContentType: "application/json",
		Headers: []outbox.Header{{Key: "X-Custom", Value: "c"}}, Payload: []byte(`{"a":1}`)}
	ctx := context.Background()
	rc, err := tg.Send(ctx, m)
	want := seen{"POST", "application/json", "s/m/1", "c", "Bearer x", `{"a":1}`}
	if err != nil || string(rc) != "rece" || len(got) != 1 || got[0] != want {
		t.Fatalf("2xx: receipt %q, %v; request %+v", rc, err, got)
	}
	set := func(s int, ra, a string) { mu.Lock(); status, retryAfter, answer = s, ra, a; mu.Unlock() }
	for _, c := range []struct {
		status    int
		ra        string
		permanent bool
		after     time.Duration
	}{
		{503, "7", false, 7 * time.Second},
		{429, "", false, 0},
		{408, "", false, 0},
		{425, "", false, 0},
		{500, "", false, 0},
		{400, "", true, 0},
		{404, "", true, 0},
		{409, "", true, 0},
	} {
		set(c.status, c.ra, strings.Repeat("why ", 500))
		_, err := tg.Send(ctx, m)
		var ra *outbox.RetryAfterError
		gotAfter := time.Duration(0)
		if errors.As(err, &ra) {
			gotAfter = ra.After
		}
		if err == nil || outbox.IsPermanent(err) != c.permanent || gotAfter != c.after ||
			!strings.Contains(err.Error(), http.StatusText(c.status)) || len(err.Error()) > 700 {
			t.Errorf("status %d: err %v (permanent %v, after %s); want permanent %v, after %s, a bounded snippet",
				c.status, err, outbox.IsPermanent(err), gotAfter, c.permanent, c.after)
		}
	}
	// A date in Retry-After.
	set(503, time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), "")
	var ra *outbox.RetryAfterError
	if _, err := tg.Send(ctx, m); !errors.As(err, &ra) || ra.After < 59*time.Minute || ra.After > time.Hour {
		t.Errorf("Retry-After date: %v", err)
	}
	// A network error is retried.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	tg2, _ := outboxhttp.New(outboxhttp.Config{URL: dead.URL})
	if _, err := tg2.Send(ctx, m); err == nil || outbox.IsPermanent(err) {
		t.Errorf("connection refused: %v, want a retryable error", err)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, c := range []outboxhttp.Config{{}, {URL: "ftp://x"}, {URL: "http://"}, {URL: "http://x", MaxReceipt: -1}} {
		if _, err := outboxhttp.New(c); err == nil || !strings.Contains(err.Error(), "Config.") {
			t.Errorf("New(%+v) = %v", c, err)
		}
	}
}
