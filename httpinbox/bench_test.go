package httpinbox_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/httpinbox"
)

// BenchmarkHTTPAgainstBaseline measures, on PostgreSQL, the middleware
// beside the same handler without it, in one run: the latency at 1,000
// requests/s (open loop: requests sent on a 1 ms clock whatever the
// answers) and the highest rate 32 clients reach (closed loop), each
// request writing one effect row. It ignores b.N; run it once:
//
//	go test ./httpinbox -run '^$' -bench HTTPAgainstBaseline -benchtime 1x
//
// The baseline handler begins its own transaction, writes the row and
// commits; behind the middleware the same handler writes the row in the
// inbox's transaction, which also claims the key and stores the answer.
func BenchmarkHTTPAgainstBaseline(b *testing.B) {
	e := pgEnv(b)
	pool := e.pool
	work := func(ctx context.Context, tx pgx.Tx, w http.ResponseWriter, body string) {
		id, err := e.effect(ctx, tx, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"order":%d}`, id)
	}
	base := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		tx, err := pool.Begin(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer tx.Rollback(context.Background()) //nolint:errcheck
		rec := httptest.NewRecorder()
		work(r.Context(), tx, rec, string(body))
		if err := tx.Commit(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes()) //nolint:errcheck
	}))
	defer base.Close()
	cfg := httpinbox.Config[pgx.Tx]{}
	if v, err := strconv.Atoi(os.Getenv("HTTPINBOX_BENCH_BATCH")); err == nil {
		cfg.MaxBatchSize = v
	}
	if v, err := strconv.Atoi(os.Getenv("HTTPINBOX_BENCH_CONCURRENCY")); err == nil {
		cfg.Concurrency = v
	}
	if v, err := time.ParseDuration(os.Getenv("HTTPINBOX_BENCH_LINGER")); err == nil {
		cfg.Linger = v
	}
	in, err := httpinbox.New(e.driver, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	rh, err := in.Handler(httpinbox.Route[pgx.Tx]{Name: "orders"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tx, _ := httpinbox.TxFromContext[pgx.Tx](r.Context())
		body, _ := io.ReadAll(r.Body)
		work(r.Context(), tx, w, string(body))
	}))
	if err != nil {
		b.Fatal(err)
	}
	mw := httptest.NewServer(rh)
	defer mw.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 512}}
	var seq atomic.Int64
	send := func(url string) (time.Duration, error) {
		n := seq.Add(1)
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(fmt.Sprint("r-", n)))
		req.Header.Set("Idempotency-Key", fmt.Sprintf(`"k-%d"`, n))
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return 0, fmt.Errorf("status %d", resp.StatusCode)
		}
		return time.Since(start), nil
	}
	const openFor, closedFor = 5 * time.Second, 5 * time.Second
	for _, round := range []string{"warm-up", "measure"} {
		bl := openLoop(b, send, base.URL, 1000, openFor)
		ml := openLoop(b, send, mw.URL, 1000, openFor)
		br := closedLoop(b, send, base.URL, 32, closedFor)
		mr := closedLoop(b, send, mw.URL, 32, closedFor)
		if round == "warm-up" {
			continue
		}
		b.ReportMetric(float64(len(bl))/openFor.Seconds(), "base-open-req/s")
		b.ReportMetric(float64(len(ml))/openFor.Seconds(), "mw-open-req/s")
		b.ReportMetric(pct(bl, 50), "base-p50-ms")
		b.ReportMetric(pct(bl, 99), "base-p99-ms")
		b.ReportMetric(pct(ml, 50), "mw-p50-ms")
		b.ReportMetric(pct(ml, 99), "mw-p99-ms")
		b.ReportMetric(pct(ml, 50)-pct(bl, 50), "added-p50-ms")
		b.ReportMetric(pct(ml, 99)-pct(bl, 99), "added-p99-ms")
		b.ReportMetric(br, "base-req/s")
		b.ReportMetric(mr, "mw-req/s")
		b.ReportMetric(mr/br, "rate-ratio")
	}
	var rows int64
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM effects`).Scan(&rows); err != nil {
		b.Fatal(err)
	}
	if rows != seq.Load() {
		b.Errorf("%d effect rows for %d requests", rows, seq.Load())
	}
	b.ReportMetric(float64(rows), "effect-rows")
}

// openLoop sends rate requests/s for d, each on its own goroutine, and
// returns their latencies.
func openLoop(b *testing.B, send func(string) (time.Duration, error), url string, rate int, d time.Duration) []time.Duration {
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); {
		<-tick.C
		wg.Go(func() {
			l, err := send(url)
			if err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			lat = append(lat, l)
			mu.Unlock()
		})
	}
	wg.Wait()
	return lat
}

// closedLoop runs clients sending one request after the other for d and
// returns the rate of answers.
func closedLoop(b *testing.B, send func(string) (time.Duration, error), url string, clients int, d time.Duration) float64 {
	var n atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for range clients {
		wg.Go(func() {
			for time.Now().Before(end) {
				if _, err := send(url); err != nil {
					b.Error(err)
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(start).Seconds()
}

func pct(lat []time.Duration, p int) float64 {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return float64(s[(len(s)-1)*p/100].Microseconds()) / 1000
}
