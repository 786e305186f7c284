// Package httpinbox is the inbox for HTTP: a net/http middleware that
// makes a handler's effects happen once per idempotency key, however often
// the client retries (draft-ietf-httpapi-idempotency-key-header, the
// practice of Stripe, Adyen and PayPal), and a webhook receiver that takes
// each delivery once (GitHub's X-GitHub-Delivery, Stripe's event id).
//
// The key, the handler's effects and the handler's response commit in one
// database transaction: the handler runs inside the inbox's transaction
// (TxFromContext), its response is captured, stored in the key's inbox row
// in the same transaction, and written to the client only after the
// commit. A crash anywhere leaves either nothing (the retry runs the
// handler) or everything (the retry gets the stored response byte for
// byte, marked Idempotent-Replayed: true).
//
// What each status means to a client, and how to retry, is in
// docs/http.md.
package httpinbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store"
)

// DefaultDocsURL is where the problem bodies' types link by default.
const DefaultDocsURL = "https://github.com/txinbox/txinbox/blob/main/docs/http.md"

// DefaultScope is Config.Scope's default: a route's keys are in scope
// "http:" + its name.
const DefaultScope = "http"

// Config configures an Inbox.
type Config[TTx any] struct {
	// Scope prefixes the inbox scope of every route's keys
	// (Scope + ":" + Route.Name). Defaults to DefaultScope.
	Scope string
	// MaxAttempts is how many failed attempts at a key (handler errors,
	// panics, statuses not kept) give it up: it is dead-lettered, and
	// identical retries are refused with 422 until an operator replays
	// it (txinbox replay). Defaults to 10.
	MaxAttempts int
	// Concurrency is how many transactions run requests at once; requests
	// arriving while all are busy share the next one, up to MaxBatchSize
	// (see txinbox.Processor.Submit). Defaults to 8.
	Concurrency int
	// MaxBatchSize caps the requests per transaction. A failing request
	// makes the others of its transaction run their handlers again (under
	// savepoints); only the run that commits is answered. 1 gives every
	// request a transaction of its own. Defaults to 16.
	MaxBatchSize int
	// Linger is how long a batch waits for more requests when every other
	// transaction slot is busy. Defaults to 0: no wait, a request is sent
	// at once; requests that queue while every slot is busy still share
	// the next free one. A wait would add its length to the latency of a
	// request alone and, at 1,000 requests/s, saves little: measured in
	// docs/benchmarks.md.
	Linger time.Duration
	// Hooks are the processor's hooks (metrics/prom, metrics/otel).
	// Defaults to none.
	Hooks []txinbox.Hook
	// Observers receive one Event per request. Defaults to none.
	Observers []Observer
	// DocsURL is the page the problem bodies' types link to, with a
	// fragment per problem. Defaults to DefaultDocsURL.
	DocsURL string
	// Logger is the processor's logger. Defaults to slog.Default().
	Logger *slog.Logger
}

// Inbox runs idempotent routes over one store. It is safe for concurrent
// use; Close it when done.
type Inbox[TTx any] struct {
	cfg  Config[TTx]
	proc *txinbox.Processor[TTx]
	// inFlight holds the keys whose request runs in this process: a second
	// one gets 409 without touching the database. Across processes the
	// store's InFlightLocker does the same.
	inFlight sync.Map
}

// New returns an Inbox over driver, whose transactions must implement
// store.ReplyKeeper (pgstore, pgdbstore, mysqlstore and sqlitestore do).
func New[TTx any](driver store.Driver[TTx], cfg Config[TTx]) (*Inbox[TTx], error) {
	if cfg.Scope == "" {
		cfg.Scope = DefaultScope
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 8
	}
	if cfg.MaxBatchSize == 0 {
		cfg.MaxBatchSize = 16
	}
	linger := cfg.Linger
	if linger == 0 {
		linger = time.Nanosecond // the processor's 0 is its default (2ms)
	}
	if cfg.DocsURL == "" {
		cfg.DocsURL = DefaultDocsURL
	}
	in := &Inbox[TTx]{cfg: cfg}
	proc, err := txinbox.NewProcessor(driver, txinbox.Config[TTx]{
		Scope: cfg.Scope, Handler: in.handle, MaxBatchSize: cfg.MaxBatchSize, Linger: linger,
		Concurrency: cfg.Concurrency, MaxAttempts: cfg.MaxAttempts, Hooks: cfg.Hooks, Logger: cfg.Logger,
		Replies: true, FailFastInFlight: true,
	})
	if err != nil {
		return nil, fmt.Errorf("httpinbox: %w", err)
	}
	in.proc = proc
	return in, nil
}

// Close stops taking requests (they get 503) and waits for the
// transactions in flight.
func (in *Inbox[TTx]) Close() { in.proc.Close() }

// Handler returns h behind the inbox on route rt. h may be nil when
// rt.Effect does the work: the answer is then 200 with no body.
func (in *Inbox[TTx]) Handler(rt Route[TTx], h http.Handler) (http.Handler, error) {
	rt = rt.withDefaults()
	if err := rt.validate(); err != nil {
		return nil, err
	}
	if h == nil && rt.Effect == nil {
		return nil, errors.New("httpinbox: Handler: a nil handler needs Route.Effect")
	}
	return &routeHandler[TTx]{in: in, rt: rt, h: h, scope: in.cfg.Scope + ":" + rt.Name}, nil
}

// Middleware is Handler as a middleware; it panics on an invalid route
// (a programmer's mistake), like http.Handle.
func (in *Inbox[TTx]) Middleware(rt Route[TTx]) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		rh, err := in.Handler(rt, h)
		if err != nil {
			panic(err)
		}
		return rh
	}
}

// observe tells the observers what became of a request.
func (in *Inbox[TTx]) observe(ctx context.Context, route string, kind EventKind, status int) {
	for _, o := range in.cfg.Observers {
		o.OnHTTPEvent(ctx, Event{Route: route, Kind: kind, Status: status})
	}
}

// call is one request on its way through the processor: the processor's
// handler finds it in its context (Submit hands each handler its own
// request's context values).
type call[TTx any] struct {
	rh   *routeHandler[TTx]
	req  *http.Request
	body []byte
	// rec is the response of the handler's last run; ran says it ran in
	// this request (not a duplicate, not refused before the handler).
	rec *recorder
	ran bool
}

type callKey struct{}

// statusError is a handler's answer that Route.Keep did not keep.
type statusError struct{ status int }

func (e *statusError) Error() string {
	return fmt.Sprintf("httpinbox: the handler answered %d, which is not stored (Route.Keep)", e.status)
}

// handle is the processor's handler: it runs the route's effect and
// handler in tx, captures the response and leaves it as the message's
// reply, stored with the commit.
func (in *Inbox[TTx]) handle(ctx context.Context, tx TTx, m *txinbox.Message) error {
	c, ok := ctx.Value(callKey{}).(*call[TTx])
	if !ok {
		return txinbox.Permanent(errors.New("httpinbox: a message without its request"))
	}
	c.ran = true
	rec := newRecorder(c.rh.rt.MaxReplyBytes)
	c.rec = rec
	hctx := context.WithValue(context.WithValue(ctx, txKey{}, tx), msgKey{}, m)
	if c.rh.rt.Effect != nil {
		if err := c.rh.rt.Effect(hctx, tx, m); err != nil {
			return err
		}
	}
	if c.rh.h != nil {
		c.rh.h.ServeHTTP(rec, withBody(c.req.WithContext(hctx), c.body))
	}
	if rec.overflow {
		return ErrReplyTooLarge
	}
	if st := rec.status(); !c.rh.rt.Keep(st) {
		return &statusError{st}
	}
	m.Reply = rec.reply().encode()
	return nil
}
