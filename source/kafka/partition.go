package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source/internal/runner"
)

// partitionOutcome is what one partition's batch of a poll came to.
type partitionOutcome struct {
	tp topicPartition
	// commit is the offset to commit (the last acked record's offset + 1)
	// and epoch its leader epoch; commit < 0: nothing to commit.
	commit int64
	epoch  int32
	// rewind is the first record not acked, to fetch again after pause;
	// rewind < 0: the whole batch was acked.
	rewind int64
	pause  time.Duration
	// acked counts the records acked in this poll, whose offsets commit
	// covers (reported to the inbox's AckHooks).
	acked int
}

func (o *partitionOutcome) ackedThrough(r *kgo.Record) {
	o.commit, o.epoch = r.Offset+1, r.LeaderEpoch
}

// processPartition processes one partition's records of a poll in offset
// order, a transaction of the processor's MaxBatchSize records at a time.
// It stops at the first record not acked (a Retry, or a transaction that
// failed) and between transactions when a rebalance waits.
func (c *Consumer) processPartition(ctx context.Context, cl *kgo.Client, p kgo.FetchTopicPartition) partitionOutcome {
	out := partitionOutcome{tp: topicPartition{p.Topic, p.Partition}, commit: -1, rewind: -1}
	recs := p.Records
	if skip := c.knownDuplicates(out.tp, recs); skip > 0 {
		c.stats.fastPath.Add(int64(skip))
		out.ackedThrough(recs[skip-1])
		out.acked += skip
		recs = recs[skip:]
	}
	size := c.batchSize()
	for start := 0; start < len(recs); start += size {
		if c.abandon.Load() || ctx.Err() != nil {
			out.rewind = recs[start].Offset
			return out
		}
		chunk := recs[start:min(start+size, len(recs))]
		acked, pause := c.processChunk(ctx, cl, out.tp, chunk)
		if acked > 0 {
			out.ackedThrough(chunk[acked-1])
			out.acked += acked
			c.batchCommitted(out.tp, chunk[acked-1].Offset)
		}
		if acked < len(chunk) {
			out.rewind, out.pause = chunk[acked].Offset, pause
			c.stats.rewinds.Add(1)
			return out
		}
	}
	return out
}

// batchSize is the processor's MaxBatchSize.
func (c *Consumer) batchSize() int { return c.batch }

// knownDuplicates counts the leading records at or below the partition's
// watermark: with the offset key they are in the inbox already, so they are
// acked as duplicates without a lookup. Records come at or below it only
// when the client fetches again what was processed (an offset reset).
func (c *Consumer) knownDuplicates(tp topicPartition, recs []*kgo.Record) int {
	if !c.offsetKeyed && !isWatermarkKey(c.cfg.Key) {
		return 0
	}
	c.mu.Lock()
	wm := int64(-1)
	if st := c.parts[tp]; st != nil {
		wm = st.watermark
	}
	c.mu.Unlock()
	n := 0
	for n < len(recs) && recs[n].Offset <= wm {
		n++
	}
	return n
}

// setWatermark moves the partition's watermark up to offset, a database
// watermark read with Checkpoints.
func (c *Consumer) setWatermark(tp topicPartition, offset int64) {
	st := c.state(tp)
	c.mu.Lock()
	defer c.mu.Unlock()
	st.watermark = max(st.watermark, offset)
	st.failures = 0
}

// batchCommitted records that the partition's records through offset
// committed: its failures end and, unless ProcessOffsets keeps the
// watermark (OffsetWatermark: processOffsets), the watermark moves up to
// offset, where ProcessCheckpoint saved it.
func (c *Consumer) batchCommitted(tp topicPartition, offset int64) {
	st := c.state(tp)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.offsets == nil {
		st.watermark = max(st.watermark, offset)
	}
	st.failures = 0
}

// processChunk runs one batch transaction and returns how many leading
// records were acked and, if not all, how long the partition pauses.
func (c *Consumer) processChunk(ctx context.Context, cl *kgo.Client, tp topicPartition, recs []*kgo.Record) (int, time.Duration) {
	msgs, positions := c.messages(tp, recs)
	cp := txinbox.Checkpoint{Source: tp.topic, Partition: tp.partition, Positions: positions}
	var res []txinbox.Result
	var err error
	watermark := c.offsets != nil
	if watermark {
		res, err = c.processOffsets(ctx, cl, cp, recs, msgs)
	} else {
		res, err = c.proc.ProcessCheckpoint(ctx, msgs, cp)
	}
	if res == nil {
		res = make([]txinbox.Result, len(recs)) // a usage error: nothing committed
	}
	acked := 0
	for acked < len(res) && res[acked].Outcome.Ack() {
		acked++
	}
	c.stats.outcomes.Count(res)
	var pause time.Duration
	switch {
	case err != nil:
		pause = c.batchFailed(ctx, tp, err)
	case acked < len(res):
		pause = max(res[acked].RetryAfter, 0)
	}
	if watermark {
		return acked, pause // the copies went out before the watermark moved past them (processOffsets)
	}
	if n, derr := c.produceDeadLetters(ctx, cl, recs[:acked], res[:acked]); derr != nil {
		acked, pause = n, c.batchFailed(ctx, tp, derr)
	}
	return acked, pause
}

// batchFailed logs a failed transaction and returns the pause before the
// partition is tried again.
func (c *Consumer) batchFailed(ctx context.Context, tp topicPartition, err error) time.Duration {
	c.stats.batchErrors.Add(1)
	st := c.state(tp)
	c.mu.Lock()
	if st.failures == 0 {
		st.failingAt = time.Now()
	}
	st.failures++
	n, outage := st.failures, time.Since(st.failingAt)
	c.mu.Unlock()
	if ctx.Err() == nil {
		c.cfg.Logger.ErrorContext(ctx, "kafka: batch not committed; the partition pauses",
			"topic", tp.topic, "partition", tp.partition, "failures", n, "err", err)
	}
	return runner.OutageDelay(c.cfg.ErrorBackoff, n, outage)
}

// messages turns the records of one partition (tp) into the inbox's
// messages and their offsets. All records of a partition share one
// PartitionKey, so that with Ordered a failed record holds back every
// later record of its partition. What every record allocates alike is
// allocated once per chunk: the messages, the partition's key, the header
// slices; and one string holds a record's header values (each value a
// substring of it).
func (c *Consumer) messages(tp topicPartition, recs []*kgo.Record) ([]*txinbox.Message, []int64) {
	part := strconv.FormatInt(int64(tp.partition), 10)
	pkey := tp.topic + "/" + part
	slab := make([]txinbox.Message, len(recs))
	msgs, positions := make([]*txinbox.Message, len(recs)), make([]int64, len(recs))
	nh := 0
	for _, r := range recs {
		nh += len(r.Headers)
	}
	headers := make([]txinbox.Header, nh)
	var buf []byte
	for i, r := range recs {
		m := &slab[i]
		*m = txinbox.Message{ID: c.cfg.Key.ID(r), Source: r.Topic,
			SourcePosition: string(strconv.AppendInt(append(append(buf[:0], part...), ':'), r.Offset, 10)),
			PartitionKey:   pkey, Payload: r.Value}
		if r.Topic != tp.topic || r.Partition != tp.partition { // not from a chunk of tp
			rp := strconv.FormatInt(int64(r.Partition), 10)
			m.SourcePosition, m.PartitionKey = rp+":"+strconv.FormatInt(r.Offset, 10), r.Topic+"/"+rp
		}
		if len(r.Headers) > 0 {
			m.Headers, headers = headers[:len(r.Headers):len(r.Headers)], headers[len(r.Headers):]
			buf = buf[:0]
			for _, h := range r.Headers {
				buf = append(buf, h.Value...)
			}
			values, at := string(buf), 0
			for j, h := range r.Headers {
				m.Headers[j] = txinbox.Header{Key: h.Key, Value: values[at : at+len(h.Value)]}
				at += len(h.Value)
			}
		}
		msgs[i], positions[i] = m, r.Offset
	}
	return msgs, positions
}

// produceDeadLetters copies the dead-lettered records to the dead-letter
// topic, in order. On a failure it returns the index of the record that
// failed: it and the later records are not acked, and are fetched again.
func (c *Consumer) produceDeadLetters(ctx context.Context, cl *kgo.Client, recs []*kgo.Record, res []txinbox.Result) (int, error) {
	if c.cfg.DeadLetterTopic == "" {
		return len(recs), nil
	}
	for i, r := range recs {
		if res[i].Outcome != txinbox.DeadLettered {
			continue
		}
		if err := c.produceDeadLetter(ctx, cl, r, res[i].Err); err != nil {
			return i, err
		}
	}
	return len(recs), nil
}

// produceDeadLetter copies one dead-lettered record to the dead-letter
// topic, with why in its headers.
func (c *Consumer) produceDeadLetter(ctx context.Context, cl *kgo.Client, r *kgo.Record, why error) error {
	dl := &kgo.Record{Topic: c.cfg.DeadLetterTopic, Key: r.Key, Value: r.Value,
		Headers: append(append([]kgo.RecordHeader(nil), r.Headers...), deadLetterHeaders(r, why)...)}
	if err := cl.ProduceSync(ctx, dl).FirstErr(); err != nil {
		return fmt.Errorf("producing the dead letter of %s/%d/%d to %s: %w",
			r.Topic, r.Partition, r.Offset, c.cfg.DeadLetterTopic, err)
	}
	c.stats.deadLettersProduced.Add(1)
	return nil
}

func deadLetterHeaders(r *kgo.Record, err error) []kgo.RecordHeader {
	if err == nil {
		err = errors.New("dead-lettered")
	}
	return []kgo.RecordHeader{
		{Key: "txinbox-error", Value: []byte(err.Error())},
		{Key: "txinbox-topic", Value: []byte(r.Topic)},
		{Key: "txinbox-partition", Value: []byte(strconv.FormatInt(int64(r.Partition), 10))},
		{Key: "txinbox-offset", Value: []byte(strconv.FormatInt(r.Offset, 10))},
	}
}
