package serve

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// serveTraces are serve's OpenTelemetry traces, off by default: a span per
// batch transaction (claim, handlers, commit) with each message's outcome
// as an event, exported over OTLP/HTTP or printed as JSON.
type serveTraces struct {
	// Mode is none, otlp or stdout.
	Mode string
	// Endpoint is the OTLP/HTTP collector URL (e.g.
	// http://collector:4318); empty: the standard OTEL_EXPORTER_OTLP_*
	// environment variables, else http://localhost:4318.
	Endpoint string

	tp *sdktrace.TracerProvider
}

func (t *serveTraces) register(fs *flag.FlagSet) {
	fs.StringVar(&t.Mode, "otel-traces", "none", "OpenTelemetry traces of each batch transaction: none, otlp (OTLP/HTTP) or stdout (JSON on stderr)")
	fs.StringVar(&t.Endpoint, "otel-endpoint", "", "OTLP/HTTP collector URL for --otel-traces otlp, e.g. http://collector:4318 (default: OTEL_EXPORTER_OTLP_* or http://localhost:4318)")
}

func (t *serveTraces) validate() error {
	switch t.Mode {
	case "none", "otlp", "stdout":
	default:
		return fmt.Errorf("--otel-traces %q: use none, otlp or stdout", t.Mode)
	}
	if t.Endpoint != "" && t.Mode != "otlp" {
		return fmt.Errorf("--otel-endpoint needs --otel-traces otlp (it is %s)", t.Mode)
	}
	return nil
}

// start builds the tracer provider; tp is nil when traces are off, and
// stop flushes the spans still buffered (bounded to 5s).
func (t *serveTraces) start(ctx context.Context, stderr io.Writer, logger *slog.Logger) (tp trace.TracerProvider, stop func(), err error) {
	var exp sdktrace.SpanExporter
	switch t.Mode {
	case "otlp":
		var opts []otlptracehttp.Option
		if t.Endpoint != "" {
			u, perr := url.Parse(t.Endpoint)
			if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, nil, fmt.Errorf("--otel-endpoint %q: want an http(s) URL such as http://collector:4318", t.Endpoint)
			}
			if u.Path == "" || u.Path == "/" {
				u.Path = "/v1/traces" // the collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it
			}
			opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	case "stdout":
		exp, err = stdouttrace.New(stdouttrace.WithWriter(stderr))
	default:
		return nil, func() {}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--otel-traces %s: %w", t.Mode, err)
	}
	// Export failures (a collector down) are logged, not fatal.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { logger.Warn("txinbox: OpenTelemetry", "err", err) }))
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("txinbox"))))
	return t.tp, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		t.tp.Shutdown(sctx) //nolint:errcheck // best effort: the collector may be gone
	}, nil
}
