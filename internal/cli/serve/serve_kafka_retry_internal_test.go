package serve

import (
	"testing"
	"time"
)

// TestKafkaHoldTime: the figures docs/kafka.md gives: with the defaults (10
// attempts, 1s doubling to 5m) a record that keeps failing holds its
// partition 511 s (8.5 min) plus up to a fifth for the jitter; with 5
// attempts from 500ms to 5s, 7.5 s to 9 s.
func TestKafkaHoldTime(t *testing.T) {
	for _, c := range []struct {
		attempts         int
		initial, max     time.Duration
		wantLo, wantHigh time.Duration
	}{
		{10, time.Second, 5 * time.Minute, 511 * time.Second, 613200 * time.Millisecond},
		{5, 500 * time.Millisecond, 5 * time.Second, 7500 * time.Millisecond, 9 * time.Second},
		{1, time.Second, time.Minute, 0, 0},
		{4, time.Second, time.Second, 3 * time.Second, 3600 * time.Millisecond},
	} {
		lo, hi := kafkaHoldTime(c.attempts, c.initial, c.max)
		if lo != c.wantLo || hi != c.wantHigh {
			t.Errorf("kafkaHoldTime(%d, %s, %s) = %s, %s; want %s, %s", c.attempts, c.initial, c.max, lo, hi, c.wantLo, c.wantHigh)
		}
	}
	b := exponentialBackoff(time.Second, 5*time.Minute)
	for a, want := range map[int]time.Duration{1: time.Second, 3: 4 * time.Second, 9: 256 * time.Second, 10: 5 * time.Minute, 60: 5 * time.Minute} {
		if d := b(a); d < want || d > want+want/5 {
			t.Errorf("backoff(%d) = %s, want %s plus at most a fifth", a, d, want)
		}
	}
}
