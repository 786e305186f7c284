package txinbox

import (
	"context"
	"sync/atomic"
	"time"
)

type submitRequest struct {
	ctx  context.Context
	msg  *Message
	done chan submitReply
}

type submitReply struct {
	res Result
	err error
}

// Submit processes one message through the processor's batcher: messages
// submitted concurrently are grouped into batches of up to
// Config.MaxBatchSize, flushed after Config.Linger, with up to
// Config.Concurrency batches in flight. It returns when the message's
// transaction has committed (or failed). Ack the message only if err is nil
// and res.Outcome.Ack() is true.
//
// If ctx is done while the batch is in flight, Submit returns ctx.Err() and
// the message may or may not have committed: do not ack it; a redelivery
// will tell.
//
// The handler of msg (Config.Handler) gets a context with ctx's values,
// whichever messages share its batch: the caller's identity, its trace
// span. Not ctx's deadline or cancellation: the handler runs in a
// transaction shared with other callers' messages, which one of them must
// not cut; its context is never cancelled by its caller (the batch
// finishes, while Submit returns ctx.Err() at once). A BatchHandler gets a
// context with no caller's values (its messages have several callers).
// Submit keeps ctx in msg until the batch ends: do not submit one Message
// twice at once.
func (p *Processor[TTx]) Submit(ctx context.Context, msg *Message) (Result, error) {
	p.batcherOnce.Do(p.startBatcher)
	msg.ctx = ctx
	req := &submitRequest{ctx: ctx, msg: msg, done: make(chan submitReply, 1)}
	select {
	case p.reqs <- req:
	case <-p.closing:
		return Result{}, ErrClosed
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	select {
	case r := <-req.done:
		return r.res, r.err
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Close stops the batcher: Submit returns ErrClosed from now on, and Close
// waits for the batches in flight to commit and answer.
func (p *Processor[TTx]) Close() {
	p.closeOnce.Do(func() { close(p.closing) })
	p.workers.Wait()
}

func (p *Processor[TTx]) startBatcher() {
	inFlight := new(atomic.Int32)
	for range p.cfg.Concurrency {
		p.workers.Add(1)
		go p.batchWorker(inFlight)
	}
}

// batchWorker gathers requests into batches and flushes them. It takes
// what is waiting at once, and lingers for more only when every other
// worker has a batch in flight (always with Concurrency 1). While a worker
// is free, the wait would add its whole length to every message's latency
// and save nothing: the messages that arrive meanwhile go to the free
// worker, and messages that queue while every worker is busy are taken
// together by the next worker free. inFlight counts the batches of all
// workers being processed.
func (p *Processor[TTx]) batchWorker(inFlight *atomic.Int32) {
	defer p.workers.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	reqs := make([]*submitRequest, 0, p.cfg.MaxBatchSize)
	for {
		reqs = reqs[:0]
		select {
		case r := <-p.reqs:
			reqs = append(reqs, r)
		case <-p.closing:
			return
		}
		reqs = p.takeWaiting(reqs)
		if len(reqs) < p.cfg.MaxBatchSize && inFlight.Load() >= int32(p.cfg.Concurrency-1) {
			reqs = p.linger(reqs, timer)
		}
		inFlight.Add(1)
		p.flush(reqs)
		inFlight.Add(-1)
	}
}

// takeWaiting adds the requests already waiting, up to a full batch.
func (p *Processor[TTx]) takeWaiting(reqs []*submitRequest) []*submitRequest {
	for len(reqs) < p.cfg.MaxBatchSize {
		select {
		case r := <-p.reqs:
			reqs = append(reqs, r)
		default:
			return reqs
		}
	}
	return reqs
}

// linger adds the requests that arrive within Config.Linger, up to a full
// batch.
func (p *Processor[TTx]) linger(reqs []*submitRequest, timer *time.Timer) []*submitRequest {
	timer.Reset(p.cfg.Linger)
	defer timer.Stop()
	for len(reqs) < p.cfg.MaxBatchSize {
		select {
		case r := <-p.reqs:
			reqs = append(reqs, r)
		case <-timer.C:
			return reqs
		}
	}
	return reqs
}

// flush processes the gathered requests. A request whose caller has gone
// away is dropped before the transaction: it was never claimed.
func (p *Processor[TTx]) flush(reqs []*submitRequest) {
	live := reqs[:0]
	for _, r := range reqs {
		if r.ctx.Err() == nil {
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		return
	}
	msgs := make([]*Message, len(live))
	for i, r := range live {
		msgs[i] = r.msg
	}
	// The batch runs to its end even if callers give up: it must commit or
	// roll back as a whole, never be cut between commit and reply. Its
	// context carries no caller's values (they were the first caller's for
	// every message: another request's identity); each handler sees its
	// own caller's (handlerContext).
	results, err := p.Process(context.Background(), msgs)
	for _, r := range reqs {
		r.msg.ctx = nil
	}
	for i, r := range live {
		r.done <- submitReply{res: results[i], err: err}
	}
}

// handlerContext is the context a handler of m runs with: ctx's deadline,
// cancellation and values, under the values of the context m was
// submitted with (Submit), which come first.
func handlerContext(ctx context.Context, m *Message) context.Context {
	if m.ctx == nil {
		return ctx
	}
	return &valuesContext{Context: ctx, values: m.ctx}
}

// valuesContext is a context whose values are looked up in values first.
type valuesContext struct {
	context.Context
	values context.Context
}

// Value returns values' value for key, or else the batch context's.
func (c *valuesContext) Value(key any) any {
	if v := c.values.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}
