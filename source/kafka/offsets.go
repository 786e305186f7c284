package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/txinbox/txinbox"
)

// adjustOffsets runs on assignment, after the group's committed offsets
// were fetched: each partition starts at the later of its committed offset
// and its database watermark + 1. The watermark commits with the batch, the
// offset commit after it; when the offset commit was lost (a crash between
// the two, a failed OffsetCommit), the watermark still says where to go on.
func (c *Consumer) adjustOffsets(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	for topic, parts := range offsets {
		wms, err := c.watermarks(ctx, topic)
		if err != nil {
			// Kafka's committed offsets are safe to start from: what
			// committed since is found again in the inbox.
			c.cfg.Logger.WarnContext(ctx, "kafka: reading the watermarks; starting from the committed offsets",
				"topic", topic, "err", err)
			continue
		}
		unconfirmed := map[int32]int64{} // no committed offset: see stale.go
		for p, o := range parts {
			wm, ok := wms[p]
			if !ok {
				continue
			}
			tp := topicPartition{topic, p}
			c.setWatermark(tp, wm)
			if committed := o.EpochOffset().Offset; committed < 0 || wm+1 > committed {
				parts[p] = kgo.NewOffset().At(wm + 1).WithEpoch(-1)
				c.stats.resumed.Add(1)
				// The records up to the watermark will not be fetched,
				// so no batch will commit their offset: commit it now.
				c.mu.Lock()
				c.pending[tp] = kgo.EpochOffset{Epoch: -1, Offset: wm + 1}
				if c.wakePoll != nil {
					c.wakePoll()
				}
				c.mu.Unlock()
				if committed < 0 {
					unconfirmed[p] = wm
					continue
				}
				c.cfg.Logger.InfoContext(ctx, "kafka: resuming after the database watermark",
					"topic", topic, "partition", p, "committed", committed, "watermark", wm)
			}
		}
		if len(unconfirmed) > 0 {
			c.resumeUnconfirmed(ctx, topic, unconfirmed)
		}
	}
	return offsets, nil
}

// watermarks returns the database watermarks of a topic's partitions that
// lie below the partitions' end offsets. A watermark at or past the end
// belongs to an earlier topic of the same name (deleted and created again):
// it is ignored, with a warning, rather than skipping the new records.
func (c *Consumer) watermarks(ctx context.Context, topic string) (map[int32]int64, error) {
	saved, err := c.proc.Checkpoints(ctx, topic)
	if err != nil || len(saved) == 0 {
		return nil, err
	}
	// The assignment that calls adjustOffsets can come before Run stored
	// its client; finding none here used to start from the committed
	// offsets and read again what the lost offset commits covered.
	var cl *kgo.Client
	select {
	case <-c.clientSet:
		cl = c.client.Load()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("listing the end offsets: %w", err)
	}
	out := map[int32]int64{}
	for part, wm := range saved {
		end, ok := ends.Lookup(topic, part)
		switch {
		case !ok:
			continue
		case wm >= end.Offset:
			c.cfg.Logger.WarnContext(ctx, "kafka: ignoring a database watermark at or past the end of its partition "+
				"(a new cluster, or the topic created again?): delete the topic's watermarks (fix) or use a new scope, "+
				"and start again; with OffsetWatermark the partition cannot move on until then",
				"scope", c.proc.Settings().Scope, "topic", topic, "partition", part, "watermark", wm, "end", end.Offset,
				"fix", deleteWatermarkSQL(c.proc.Settings().Scope, topic, nil))
			continue
		}
		out[part] = wm
	}
	return out, nil
}

// revoked commits the offsets still pending for the revoked partitions
// (their last commit failed), then forgets them. With BlockRebalanceOnPoll
// no batch of theirs is in flight: the poll that fetched them committed (or
// abandoned) before the revoke could start.
func (c *Consumer) revoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	c.mu.Lock()
	offsets := map[string]map[int32]kgo.EpochOffset{}
	for topic, parts := range revoked {
		for _, p := range parts {
			if eo, ok := c.pending[topicPartition{topic, p}]; ok {
				addOffset(offsets, topicPartition{topic, p}, eo)
			}
		}
	}
	c.mu.Unlock()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), revokeCommitTimeout)
	defer cancel()
	c.commitOffsets(cctx, cl, offsets)
	c.forget(ctx, cl, revoked)
}

// forget drops the state of revoked or lost partitions, and their pending
// commits: a commit to a partition owned by another member could rewind
// its commits.
func (c *Consumer) forget(_ context.Context, cl *kgo.Client, lost map[string][]int32) {
	c.mu.Lock()
	for topic, parts := range lost {
		for _, p := range parts {
			tp := topicPartition{topic, p}
			if st := c.parts[tp]; st != nil && st.resume != nil {
				st.resume.Stop()
			}
			delete(c.parts, tp)
			delete(c.pending, tp)
			delete(c.pendingAcked, tp)
		}
	}
	c.mu.Unlock()
	// A partition paused for a Retry and assigned again later starts
	// unpaused from the committed offset (or the watermark).
	cl.ResumeFetchPartitions(lost)
}

func addOffset(offsets map[string]map[int32]kgo.EpochOffset, tp topicPartition, eo kgo.EpochOffset) {
	if offsets[tp.topic] == nil {
		offsets[tp.topic] = map[int32]kgo.EpochOffset{}
	}
	offsets[tp.topic][tp.partition] = eo
}

// commit commits the offsets of the records whose batches committed, with
// the offsets whose commit failed before, in one OffsetCommit. A failed
// commit stays pending and is tried again after the next poll (Run polls
// with a timeout while commits are pending); the database watermark covers
// a crash before then.
func (c *Consumer) commit(ctx context.Context, cl *kgo.Client, outs []partitionOutcome) {
	c.mu.Lock()
	for _, o := range outs {
		if o.commit >= 0 {
			c.pending[o.tp] = kgo.EpochOffset{Epoch: o.epoch, Offset: o.commit}
			c.pendingAcked[o.tp] += o.acked
		}
	}
	offsets := map[string]map[int32]kgo.EpochOffset{}
	for tp, eo := range c.pending {
		addOffset(offsets, tp, eo)
	}
	// The client holds commits back while the group joins and syncs, and
	// the join may wait for this member: when a rebalance waits for it
	// (rebalanceWaits) or Run stops, the commit is cancelled. The offsets
	// stay pending; revoked commits them, or the next poll does.
	cctx, cancel := context.WithTimeout(ctx, c.cfg.CommitTimeout)
	defer cancel()
	c.cancelCommit = cancel
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.cancelCommit = nil
		c.mu.Unlock()
	}()
	if !c.abandon.Load() && ctx.Err() == nil {
		c.commitOffsets(cctx, cl, offsets)
	}
}

// revokeCommitTimeout bounds the commit of pending offsets while partitions
// are revoked: the rebalance waits for it, and the database watermarks make
// it only a shortcut for the next owner.
const revokeCommitTimeout = 2 * time.Second

// rebalanceWaits is called when a rebalance waits for this member: the
// partitions stop between transactions and an offset commit in flight is
// cancelled.
func (c *Consumer) rebalanceWaits(context.Context, *kgo.Client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.processing {
		return // late: the poll it waited for has already allowed it
	}
	c.abandon.Store(true)
	if c.cancelCommit != nil {
		c.cancelCommit()
	}
}

// commitOffsets commits offsets within ctx and clears the pending ones it
// committed. It reports the commit to the inbox's AckHooks: one AckInfo
// for the partitions committed, one for those that failed.
func (c *Consumer) commitOffsets(ctx context.Context, cl *kgo.Client, offsets map[string]map[int32]kgo.EpochOffset) {
	if len(offsets) == 0 {
		return
	}
	var all, committed, failed ackGroup
	covered := map[topicPartition]int{}
	c.mu.Lock()
	for topic, parts := range offsets {
		for p := range parts {
			tp := topicPartition{topic, p}
			covered[tp] = c.pendingAcked[tp]
			all.add(tp, covered[tp])
		}
	}
	c.mu.Unlock()
	start := time.Now()
	var firstErr error
	cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			c.stats.commitErrors.Add(1)
			c.cfg.Logger.WarnContext(ctx, "kafka: offset commit failed; it is tried again", "err", err)
			failed, firstErr = all, err
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				tp := topicPartition{t.Topic, p.Partition}
				if perr := kerr.ErrorForCode(p.ErrorCode); perr != nil {
					c.stats.commitErrors.Add(1)
					c.cfg.Logger.WarnContext(ctx, "kafka: offset commit failed; it is tried again",
						"topic", tp.topic, "partition", tp.partition, "err", perr)
					failed.add(tp, covered[tp])
					if firstErr == nil {
						firstErr = fmt.Errorf("partition %s/%d: %w", tp.topic, tp.partition, perr)
					}
					continue
				}
				committed.add(tp, covered[tp])
				// Subtract rather than delete: records acked by a commit
				// that became pending since are not covered by this one.
				if n := c.pendingAcked[tp] - covered[tp]; n > 0 {
					c.pendingAcked[tp] = n
				} else {
					delete(c.pendingAcked, tp)
				}
				if eo, ok := c.pending[tp]; ok && eo.Offset == offsets[tp.topic][tp.partition].Offset {
					delete(c.pending, tp)
				}
			}
		}
		c.stats.commits.Add(1)
	})
	took := time.Since(start)
	if committed.partitions > 0 {
		c.proc.ReportAck(ctx, txinbox.AckInfo{Source: committed.source(), Messages: committed.messages, Duration: took})
	}
	if failed.partitions > 0 {
		c.proc.ReportAck(ctx, txinbox.AckInfo{Source: failed.source(), Messages: failed.messages, Duration: took, Err: firstErr})
	}
}

// ackGroup sums the partitions of an offset commit that came to the same
// result, for one txinbox.AckInfo.
type ackGroup struct {
	partitions int
	messages   int
	topic      string // the first partition's topic
	mixed      bool   // partitions of more than one topic
}

func (g *ackGroup) add(tp topicPartition, messages int) {
	if g.partitions == 0 {
		g.topic = tp.topic
	} else if tp.topic != g.topic {
		g.mixed = true
	}
	g.partitions++
	g.messages += messages
}

// source is the messages' Message.Source: the topic, or "kafka" when the
// commit covered several topics.
func (g *ackGroup) source() string {
	if g.mixed {
		return "kafka"
	}
	return g.topic
}

// rewind sets the partitions that stopped short back to their first record
// not acked, and pauses them for their backoff. It runs before
// AllowRebalance, while this member still owns them.
func (c *Consumer) rewind(cl *kgo.Client, outs []partitionOutcome) {
	for _, o := range outs {
		if o.rewind < 0 {
			continue
		}
		cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{o.tp.topic: {o.tp.partition: {Epoch: -1, Offset: o.rewind}}})
		if o.pause > 0 {
			c.pause(cl, o.tp, o.pause)
		}
	}
}

// pause stops fetching a partition for d: a Retry blocks its partition
// only, the others go on.
func (c *Consumer) pause(cl *kgo.Client, tp topicPartition, d time.Duration) {
	tps := map[string][]int32{tp.topic: {tp.partition}}
	cl.PauseFetchPartitions(tps)
	st := c.state(tp)
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.resume != nil {
		st.resume.Stop()
	}
	st.resume = time.AfterFunc(d, func() { cl.ResumeFetchPartitions(tps) })
}
