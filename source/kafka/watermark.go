package kafka

import (
	"context"
	"errors"

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
// transactions implement store.CheckpointAdvancer (pgstore, sqlitestore),
// and a processor that is a source.OffsetProcessor (a *txinbox.Processor
// is).
var OffsetWatermark Key = watermarkKey{}

type watermarkKey struct{}

func (watermarkKey) ID(r *kgo.Record) string { return offsetKey{}.ID(r) }

// isWatermarkKey reports whether key is OffsetWatermark.
func isWatermarkKey(key Key) bool {
	_, ok := key.(watermarkKey)
	return ok
}

// processOffsets runs one chunk of a partition (cp) with offsets as the
// inbox, from the partition's watermark as this consumer knows it: the
// database's after its assignment, then the checkpoint ProcessOffsets
// returned, which becomes the watermark whether or not the chunk
// committed. When another consumer moved the watermark meanwhile
// (ErrCheckpointMoved), it is read again: the records at or below it are
// acked as duplicates on their next fetch.
//
// A dead-lettered record is copied to the DeadLetterTopic before the
// watermark moves past it: once past, nothing would run it again, and a
// crash between the two would lose the copy. If the copy fails, the
// record is a Retry: fetched again, dead-lettered again, copied again.
func (c *Consumer) processOffsets(ctx context.Context, cl *kgo.Client, cp txinbox.Checkpoint, recs []*kgo.Record,
	msgs []*txinbox.Message) ([]txinbox.Result, error) {
	tp := topicPartition{cp.Source, cp.Partition}
	ocp := txinbox.OffsetCheckpoint{Checkpoint: cp, Saved: c.watermark(tp)}
	if c.cfg.DeadLetterTopic != "" {
		ocp.DeadLettered = func(ctx context.Context, i int, res txinbox.Result) error {
			return c.produceDeadLetter(ctx, cl, recs[i], res.Err)
		}
	}
	res, saved, err := c.offsets.ProcessOffsets(ctx, msgs, ocp)
	c.keepWatermark(tp, saved)
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

// keepWatermark raises the partition's watermark to the checkpoint saved
// in the database, as ProcessOffsets returned it (never lowers it: a
// re-assignment during the batch may have raised it already).
func (c *Consumer) keepWatermark(tp topicPartition, saved int64) {
	st := c.state(tp)
	c.mu.Lock()
	defer c.mu.Unlock()
	st.watermark = max(st.watermark, saved)
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
