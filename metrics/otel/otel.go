// Package otel traces txinbox's batch transactions with OpenTelemetry: plug
// a *Tracer into txinbox.Config.Hooks. Each batch is a span
// "txinbox.batch" (size, new messages, whether it was redone, the time in
// the handlers and in the COMMIT, its error), and each message's outcome an
// event on it. Off unless configured.
package otel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/httpinbox"
)

// Tracer is a txinbox hook (BatchStartHook, BatchHook, OutcomeHook).
type Tracer struct {
	tracer trace.Tracer
}

var (
	_ txinbox.BatchStartHook = (*Tracer)(nil)
	_ txinbox.BatchHook      = (*Tracer)(nil)
	_ txinbox.OutcomeHook    = (*Tracer)(nil)
	_ httpinbox.Observer     = (*Tracer)(nil)
)

// New returns a Tracer on tp; a nil tp means the global provider.
func New(tp trace.TracerProvider) *Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return &Tracer{tracer: tp.Tracer("github.com/txinbox/txinbox")}
}

// OnBatchStart starts the batch's span; the processor ends it.
func (t *Tracer) OnBatchStart(ctx context.Context, size int) (context.Context, func(error)) {
	ctx, span := t.tracer.Start(ctx, "txinbox.batch", trace.WithAttributes(attribute.Int("txinbox.batch.size", size)))
	return ctx, func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// OnBatch adds what the batch came to, with the time spent in its handlers
// and its COMMIT as float milliseconds (txinbox.batch.handler_ms,
// txinbox.batch.commit_ms).
func (t *Tracer) OnBatch(ctx context.Context, info txinbox.BatchInfo) {
	trace.SpanFromContext(ctx).SetAttributes(attribute.Int("txinbox.batch.new", info.New),
		attribute.Bool("txinbox.batch.redone", info.Redone), attribute.Int("txinbox.batch.transient_retries", info.Transient),
		attribute.Float64("txinbox.batch.handler_ms", milliseconds(info.HandlerDuration)),
		attribute.Float64("txinbox.batch.commit_ms", milliseconds(info.CommitDuration)))
}

func milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// OnOutcome records one message's outcome as an event of the batch span.
func (t *Tracer) OnOutcome(ctx context.Context, msg *txinbox.Message, res txinbox.Result) {
	trace.SpanFromContext(ctx).AddEvent("txinbox.outcome", trace.WithAttributes(
		attribute.String("txinbox.scope", msg.Scope), attribute.String("txinbox.message_id", msg.ID),
		attribute.String("txinbox.source", msg.Source), attribute.String("txinbox.outcome", res.Outcome.String())))
}

// OnHTTPEvent implements httpinbox.Observer: what the idempotency
// middleware made of a request, as an event "txinbox.http" on the
// request's span (an otelhttp server span, when the server has one) with
// its route, event (processed, replayed, conflict, mismatch, ...) and
// status. Plug the Tracer into httpinbox.Config.Observers as well as its
// Hooks.
func (t *Tracer) OnHTTPEvent(ctx context.Context, ev httpinbox.Event) {
	trace.SpanFromContext(ctx).AddEvent("txinbox.http", trace.WithAttributes(
		attribute.String("txinbox.http.route", ev.Route), attribute.String("txinbox.http.event", ev.Kind.String()),
		attribute.Int("http.response.status_code", ev.Status)))
}
