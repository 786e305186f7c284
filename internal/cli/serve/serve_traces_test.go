package serve_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// collector is an OTLP/HTTP trace receiver: it decodes each export and
// keeps the span names and the outcome events.
type collector struct {
	mu       sync.Mutex
	spans    []string
	outcomes []string
	services []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	var req coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &req)
	}
	if r.URL.Path != "/v1/traces" || err != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				c.services = append(c.services, a.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				c.spans = append(c.spans, sp.Name)
				for _, ev := range sp.Events {
					for _, a := range ev.Attributes {
						if a.Key == "txinbox.outcome" {
							c.outcomes = append(c.outcomes, a.GetValue().GetStringValue())
						}
					}
				}
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ = proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Write(b) //nolint:errcheck // the exporter went away
}

// TestServeExportsTraces: with --otel-traces otlp, each batch transaction
// reaches an OTLP/HTTP collector as a txinbox.batch span, the message's
// outcome (processed, then duplicate) as its event; the spans still
// buffered at the stop are flushed.
func TestServeExportsTraces(t *testing.T) {
	t.Parallel()
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	url, stop, errs := startServe(t, "--db", filepath.Join(t.TempDir(), "t.db"), "--no-purge",
		"--otel-traces", "otlp", "--otel-endpoint", srv.URL)
	postReceipt(t, url)
	postReceipt(t, url)
	if code := stop(); code != clikit.ExitOK {
		t.Fatalf("serve exited %d: %s", code, errs)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if !slices.Contains(col.spans, "txinbox.batch") || !slices.Contains(col.services, "txinbox") {
		t.Errorf("spans %v of services %v, want txinbox.batch of txinbox", col.spans, col.services)
	}
	slices.Sort(col.outcomes)
	if strings.Join(col.outcomes, ",") != "duplicate,processed" {
		t.Errorf("outcome events %v, want one processed and one duplicate", col.outcomes)
	}
}

func TestServeTraceFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--otel-traces", "jaeger"}, `--otel-traces "jaeger": use none, otlp or stdout`},
		{[]string{"--otel-endpoint", "http://127.0.0.1:4318"}, "--otel-endpoint needs --otel-traces otlp"},
	} {
		_, errs, code := run(t, append([]string{"serve", "--db", filepath.Join(t.TempDir(), "o.db"), "--as4-listen", "127.0.0.1:0"}, c.args...)...)
		if code != clikit.ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, errs)
		}
	}
}
