package store_test

import (
	"math"
	"testing"

	"github.com/txinbox/txinbox/store"
)

// TestPartitionText: a partition's text in its row reads back as the
// partition (every int32), and a row's text that is no partition number
// is an error naming it, not partition 0.
func TestPartitionText(t *testing.T) {
	t.Parallel()
	for _, p := range []int32{0, 3, 41, math.MaxInt32} {
		text := store.Checkpoint{Partition: p}.PartitionText()
		got, err := store.ParsePartition(text)
		if err != nil || got != p {
			t.Errorf("partition %d as %q reads back as %d, %v", p, text, got, err)
		}
	}
	if text := (store.Checkpoint{Partition: 3}).PartitionText(); text != "3" {
		t.Errorf("partition 3 is kept as %q, want \"3\" (the rows written before partitions were numbers)", text)
	}
	for _, text := range []string{"", "invoices/3", "2147483648", "0x3"} {
		if got, err := store.ParsePartition(text); err == nil {
			t.Errorf("ParsePartition(%q) = %d, want an error", text, got)
		}
	}
}
