package txinbox

import (
	"context"
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
func (p *Processor[TTx]) Submit(ctx context.Context, msg *Message) (Result, error) {
	p.batcherOnce.Do(p.startBatcher)
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
	for range p.cfg.Concurrency {
		p.workers.Add(1)
		go p.batchWorker()
	}
}

func (p *Processor[TTx]) batchWorker() {
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
		timer.Reset(p.cfg.Linger)
	collect:
		for len(reqs) < p.cfg.MaxBatchSize {
			select {
			case r := <-p.reqs:
				reqs = append(reqs, r)
			case <-timer.C:
				break collect
			}
		}
		timer.Stop()
		p.flush(reqs)
	}
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
	// roll back as a whole, never be cut between commit and reply.
	results, err := p.Process(context.WithoutCancel(live[0].ctx), msgs)
	for i, r := range live {
		r.done <- submitReply{res: results[i], err: err}
	}
}
