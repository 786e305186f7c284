package kafka

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// A stale watermark is one saved against another cluster, or against an
// earlier topic of the same name: its offsets say nothing of this topic's
// records, yet the consumer would start after it and never process the
// records up to it. What the broker can tell:
//
//   - The watermark is at or past the partition's end: no record it
//     covers exists. It is stale, and ignored (watermarks).
//   - The group has a committed offset for the partition: the group
//     consumed this very partition, and the watermark (saved with the
//     same batches) is taken.
//   - The group has none, and the partition's log start is past the
//     watermark: the records it covers were deleted by retention, which a
//     newly created topic has not done. It is taken.
//   - The group has none, and the partition still holds every record up
//     to the watermark (log start <= watermark < end): a new cluster or a
//     topic created again with more records than the watermark (a
//     development loop against a fresh broker), or this cluster after the
//     group's committed offsets expired (offsets.retention.minutes), or a
//     new group that crashed before its first offset commit. Kafka keeps
//     no trace that tells these apart. Starting from the beginning would
//     run the effects of the last two again, so the watermark is taken,
//     and a warning says what to do if the cluster is new.

// resumeUnconfirmed logs the resume after the watermarks of a topic's
// partitions for which the group has no committed offset (wms): a warning
// with the fix for those whose records up to the watermark are all still
// in the topic, the usual line for the others.
func (c *Consumer) resumeUnconfirmed(ctx context.Context, topic string, wms map[int32]int64) {
	var starts, ends kadm.ListedOffsets
	cl := c.client.Load()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		ends, err = adm.ListEndOffsets(ctx, topic)
	}
	for p, wm := range wms {
		start, end := int64(-1), int64(-1)
		if err == nil {
			s, sok := starts.Lookup(topic, p)
			e, eok := ends.Lookup(topic, p)
			if sok && eok && s.Err == nil && e.Err == nil {
				start, end = s.Offset, e.Offset
			}
		}
		if start > wm {
			c.cfg.Logger.InfoContext(ctx, "kafka: resuming after the database watermark",
				"topic", topic, "partition", p, "committed", "none", "watermark", wm, "start", start)
			continue
		}
		c.cfg.Logger.WarnContext(ctx, "kafka: the group has no committed offset and the topic still holds the records "+
			"up to the database watermark: resuming after the watermark. If this cluster or topic is new (a development "+
			"loop against a fresh broker, a topic created again), those records were never processed: stop the consumers, "+
			"delete the partition's watermark (fix) or use a new scope, and start again. If the group's committed offsets "+
			"expired (offsets.retention.minutes), nothing is to be done",
			"scope", c.proc.Settings().Scope, "topic", topic, "partition", p, "committed", "none", "watermark", wm,
			"start", start, "end", end, "fix", deleteWatermarkSQL(c.proc.Settings().Scope, topic, &p))
	}
}

// deleteWatermarkSQL is the statement that deletes the watermark of a
// topic's partition, or of every partition when partition is nil (a
// topic re-created whole), for a log line: with the default table prefix
// and schema.
func deleteWatermarkSQL(scope, topic string, partition *int32) string {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	sql := fmt.Sprintf("DELETE FROM txinbox_checkpoints WHERE scope = %s AND source = %s", q(scope), q(topic))
	if partition != nil {
		sql += fmt.Sprintf(" AND partition = '%d'", *partition)
	}
	return sql
}
