package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKnownDuplicates checks the fast path: with the offset key, the
// leading records at or below the partition's watermark are duplicates
// without a lookup; with another key, none is.
func TestKnownDuplicates(t *testing.T) {
	t.Parallel()
	recs := make([]*kgo.Record, 6)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "t", Partition: 1, Offset: int64(10 + i)}
	}
	tp := topicPartition{"t", 1}
	for _, tc := range []struct {
		name        string
		offsetKeyed bool
		watermark   int64 // -1: none known
		want        int
	}{
		{"no watermark", true, -1, 0},
		{"below the batch", true, 9, 0},
		{"inside the batch", true, 12, 3},
		{"past the batch", true, 99, 6},
		{"header key", false, 12, 0},
	} {
		c := &Consumer{offsetKeyed: tc.offsetKeyed, parts: map[topicPartition]*partitionState{}}
		if tc.watermark >= 0 {
			c.setWatermark(tp, tc.watermark)
		}
		if got := c.knownDuplicates(tp, recs); got != tc.want {
			t.Errorf("%s: %d known duplicates, want %d", tc.name, got, tc.want)
		}
	}
}

func TestOffsetKeyDetected(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		key  Key
		want bool
	}{
		{"default", nil, true},
		{"OffsetKey", OffsetKey, true},
		{"header", HeaderKey("message-id"), false},
		{"OffsetKey as a KeyFunc", KeyFunc(OffsetKey.ID), false},
	} {
		if got := isOffsetKey(tc.key); got != tc.want {
			t.Errorf("%s: isOffsetKey = %v, want %v", tc.name, got, tc.want)
		}
	}
	r := &kgo.Record{Topic: "invoices", Partition: 3, Offset: 1042,
		Headers: []kgo.RecordHeader{{Key: "ce_id", Value: []byte("A-1")}}}
	if got := OffsetKey.ID(r); got != "invoices/3/1042" {
		t.Errorf("OffsetKey = %q", got)
	}
	if got := HeaderKey("ce_id")(r); got != "A-1" {
		t.Errorf("HeaderKey = %q", got)
	}
	if got := HeaderKey("message-id")(r); got != "" {
		t.Errorf("HeaderKey of a missing header = %q", got)
	}
}
