package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The consumer pipelines fetching with processing. A poll's records go to
// one lane per partition; a lane's records run in offset order, one worker
// at a time, up to Config.Concurrency lanes at once. While a slot is free,
// the consumer takes what the client fetched meanwhile (a poll that does
// not wait) and starts the lanes that have records: a partition whose
// records arrived in another broker's fetch starts at once instead of
// waiting for the slowest partition of the poll before. Offsets are
// committed as lanes finish.
//
// The rebalance stays blocked (kgo.BlockRebalanceOnPoll) from the first
// poll until every lane is idle, so no batch of a revoked partition is in
// flight when it is revoked and no offset commit lands after: when a
// rebalance waits, the lanes stop at their next transaction boundary, no
// new work starts, and the partitions are set back to their first record
// not processed (queued ones included) before the rebalance is allowed.

// refillEvery is how often, while a slot is free, the consumer takes what
// the client has fetched since the last poll.
const refillEvery = 2 * time.Millisecond

// lane is one partition's records waiting for its worker.
type lane struct {
	tp    topicPartition
	queue []*kgo.Record
	busy  bool
}

// pipeline is the state of one handlePoll: the lanes and their workers.
type pipeline struct {
	c       *Consumer
	cl      *kgo.Client
	lanes   map[topicPartition]*lane
	order   []*lane // in the order the partitions first came, for fairness
	queued  int     // records in the lanes' queues
	running int
	done    chan partitionOutcome
	refused error
}

// handlePoll processes a poll's records and the records that further polls
// bring meanwhile, until every lane is idle (or a rebalance waits, or ctx
// is done). It returns a *RefusedError if a later poll carried one.
func (c *Consumer) handlePoll(ctx context.Context, cl *kgo.Client, fetches kgo.Fetches) error {
	p := &pipeline{c: c, cl: cl, lanes: map[topicPartition]*lane{}, done: make(chan partitionOutcome, c.cfg.Concurrency)}
	p.add(fetches)
	tick := time.NewTicker(refillEvery)
	defer tick.Stop()
	for {
		p.startLanes(ctx)
		if p.running == 0 {
			break
		}
		var outs []partitionOutcome
		select {
		case o := <-p.done:
			outs = p.finished(o)
		case <-tick.C:
		}
		if len(outs) > 0 {
			c.commit(ctx, cl, outs)
			c.rewind(cl, outs)
		}
		p.refill(ctx)
	}
	// Offsets whose commit failed before, or that an assignment made
	// pending (resumed after the watermark), are committed even by a poll
	// without records.
	c.commit(ctx, cl, nil)
	c.rewind(cl, p.leftovers())
	return p.refused
}

// add queues the records of fetches on their partitions' lanes.
func (p *pipeline) add(fetches kgo.Fetches) {
	fetches.EachPartition(func(f kgo.FetchTopicPartition) {
		if len(f.Records) == 0 {
			return
		}
		tp := topicPartition{f.Topic, f.Partition}
		l := p.lanes[tp]
		if l == nil {
			l = &lane{tp: tp}
			p.lanes[tp] = l
			p.order = append(p.order, l)
		}
		l.queue = append(l.queue, f.Records...)
		p.queued += len(f.Records)
	})
}

// stopping reports whether no new work may start: a rebalance waits, ctx
// is done, or a poll carried a refusal.
func (p *pipeline) stopping(ctx context.Context) bool {
	return p.c.abandon.Load() || ctx.Err() != nil || p.refused != nil
}

// startLanes starts a worker on each idle lane with queued records, while
// slots are free. A worker takes its lane's whole queue.
func (p *pipeline) startLanes(ctx context.Context) {
	for _, l := range p.order {
		if p.running >= p.c.cfg.Concurrency || p.stopping(ctx) {
			return
		}
		if l.busy || len(l.queue) == 0 {
			continue
		}
		recs := l.queue
		l.queue, l.busy = nil, true
		p.queued -= len(recs)
		p.running++
		go func() {
			p.done <- p.c.processPartition(ctx, p.cl, kgo.FetchTopicPartition{Topic: l.tp.topic,
				FetchPartition: kgo.FetchPartition{Partition: l.tp.partition, Records: recs}})
		}()
	}
}

// finished takes o and the outcomes of the other workers that finished by
// now. A lane that stopped short drops its queue: its partition is set
// back to the record it stopped at, and everything after is fetched
// again.
func (p *pipeline) finished(o partitionOutcome) []partitionOutcome {
	outs := []partitionOutcome{o}
	for more := true; more; {
		select {
		case o := <-p.done:
			outs = append(outs, o)
		default:
			more = false
		}
	}
	for _, o := range outs {
		p.running--
		l := p.lanes[o.tp]
		l.busy = false
		if o.rewind >= 0 {
			p.queued -= len(l.queue)
			l.queue = nil
		}
	}
	return outs
}

// refill takes what the client fetched meanwhile, without waiting, when
// mayRefill says so.
func (p *pipeline) refill(ctx context.Context) {
	if !p.mayRefill(ctx) {
		return
	}
	//lint:ignore SA1012 a nil context is kgo's poll that does not wait
	f := p.cl.PollRecords(nil, p.c.cfg.MaxPollRecords)
	if refused := p.c.fetchErrors(ctx, f); refused != nil && p.refused == nil {
		p.refused = refused
	}
	p.add(f)
}

// mayRefill reports whether to take what the client fetched meanwhile: a
// slot is free and the queues are short. The queues hold at most about one
// fetch beyond the limit, however slow a partition is.
func (p *pipeline) mayRefill(ctx context.Context) bool {
	limit := p.c.cfg.Concurrency * p.c.batchSize() * 4
	return !p.stopping(ctx) && p.running < p.c.cfg.Concurrency && p.queued < limit
}

// leftovers are the outcomes that set back the partitions whose queued
// records never started (a rebalance waits, or ctx is done): the client
// has fetched past them.
func (p *pipeline) leftovers() []partitionOutcome {
	var outs []partitionOutcome
	for _, l := range p.order {
		if len(l.queue) > 0 {
			outs = append(outs, partitionOutcome{tp: l.tp, commit: -1, rewind: l.queue[0].Offset})
			l.queue = nil
		}
	}
	return outs
}
