package kafka

import (
	"context"
	"errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox"
)

// OffsetWatermark keys records on their offsets, as OffsetKey does, and
// keeps offsets as the inbox: no inbox row is written for a record. Each
// batch transaction moves its partition's watermark (the database
// checkpoint) with the effects, and the watermark alone says which records
// are done: a record is processed if and only if its offset is at or below
// its partition's watermark. The guarantees are OffsetKey's: a partition's
// records run in order, a Retry holds back the rest of its partition and
// the watermark never passes it, a record redelivered after a crash or a
// rebalance is acked without running again, and two consumers of one
// partition (one of them a zombie after a rebalance) never both commit: the
// second finds the watermark moved and rolls back. What it gives up: a
// producer's re-send of an event at a new offset is a new record (use
// HeaderKey to catch those), and inspect cannot list the processed records
// one by one, only the partitions' watermarks. It needs a store whose
// transactions implement store.CheckpointAdvancer (pgstore, sqlitestore).
// The processor must also have ProcessOffsets (a *txinbox.Processor has).
var OffsetWatermark Key = watermarkKey{}

type watermarkKey struct{}

func (watermarkKey) ID(r *kgo.Record) string { return offsetKey{}.ID(r) }

// isWatermarkKey reports whether key is OffsetWatermark.
func isWatermarkKey(key Key) bool {
	_, ok := key.(watermarkKey)
	return ok
}

// offsetsProcessor is a processor that keeps offsets as the inbox
// (txinbox.Processor.ProcessOffsets), which OffsetWatermark needs.
type offsetsProcessor interface {
	ProcessOffsets(ctx context.Context, msgs []*txinbox.Message, cp txinbox.OffsetCheckpoint) ([]txinbox.Result, int64, error)
}

// processOffsets runs one chunk of a partition with offsets as the inbox,
// from the partition's watermark as this consumer knows it (the database's
// after its assignment, then what its own batches saved). When another
// consumer moved the watermark meanwhile, it reads it again: the records
// at or below it are acked as duplicates on their next fetch.
//
// A dead-lettered record is copied to the DeadLetterTopic before the
// watermark moves past it: once past, nothing would run it again, and a
// crash between the two would lose the copy. If the copy fails, the
// record is a Retry: fetched again, dead-lettered again, copied again.
func (c *Consumer) processOffsets(ctx context.Context, cl *kgo.Client, tp topicPartition, recs []*kgo.Record,
	msgs []*txinbox.Message, positions []int64) ([]txinbox.Result, error) {
	cp := txinbox.OffsetCheckpoint{Source: tp.topic, Partition: strconv.FormatInt(int64(tp.partition), 10),
		Positions: positions, Saved: c.watermark(tp)}
	if c.cfg.DeadLetterTopic != "" {
		cp.DeadLettered = func(ctx context.Context, i int, res txinbox.Result) error {
			return c.produceDeadLetter(ctx, cl, recs[i], res.Err)
		}
	}
	res, _, err := c.proc.(offsetsProcessor).ProcessOffsets(ctx, msgs, cp)
	if errors.Is(err, txinbox.ErrCheckpointMoved) {
		// Read as at assignment: a watermark at or past the partition's
		// end (left by a deleted topic of the same name) is not taken.
		if wms, rerr := c.watermarks(ctx, tp.topic); rerr == nil {
			if wm, ok := wms[tp.partition]; ok {
				c.setWatermark(tp, wm)
			}
		}
	}
	return res, err
}

// watermark is the partition's watermark as this consumer knows it, -1
// for none.
func (c *Consumer) watermark(tp topicPartition) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.parts[tp]; st != nil {
		return st.watermark
	}
	return -1
}
