package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// watermarkState is what inspect can say of an id with no inbox row when
// the id is a Kafka offset key ("topic/partition/offset") whose partition
// has a watermark: with offsets as the inbox (kafka.OffsetWatermark) no
// row is written, and the record is processed if and only if its offset
// is at or below the watermark (processed). ok is false for other ids.
func watermarkState(ctx context.Context, db *clikit.InboxDB, scope, id string) (state string, out map[string]any, ok, processed bool) {
	slash := strings.LastIndexByte(id, '/')
	if slash < 0 {
		return "", nil, false, false
	}
	offset, err := strconv.ParseInt(id[slash+1:], 10, 64)
	rest := id[:slash]
	slash = strings.LastIndexByte(rest, '/')
	if err != nil || slash < 0 {
		return "", nil, false, false
	}
	topic, partition := rest[:slash], rest[slash+1:]
	part, err := strconv.ParseInt(partition, 10, 32)
	if err != nil {
		return "", nil, false, false
	}
	var wms map[int32]int64
	wms, err = db.Checkpoints(ctx, scope, topic)
	wm, found := wms[int32(part)]
	if err != nil || !found {
		return "", nil, false, false
	}
	out = map[string]any{"topic": topic, "partition": partition, "offset": offset, "watermark": wm}
	if offset <= wm {
		return fmt.Sprintf("processed (covered by the partition watermark %d: with offsets as the inbox no inbox row is kept; "+
			"a record is processed if and only if its offset is at or below the watermark)", wm), out, true, true
	}
	return fmt.Sprintf("not processed yet (offset past the partition watermark %d)", wm), out, true, false
}
