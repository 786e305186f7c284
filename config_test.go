package txinbox

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"
)

func TestConfigValidateNamesTheField(t *testing.T) {
	h := func(context.Context, *sql.Tx, *Message) error { return nil }
	bh := func(context.Context, *sql.Tx, []*Message) error { return nil }
	for _, tc := range []struct {
		cfg   Config[*sql.Tx]
		field string
	}{
		{Config[*sql.Tx]{Handler: h}, "Scope"},
		{Config[*sql.Tx]{Scope: "s"}, "Handler"},
		{Config[*sql.Tx]{Scope: "s", Handler: h, BatchHandler: bh}, "BatchHandler"},
		{Config[*sql.Tx]{Scope: "s", Handler: h, MaxBatchSize: 5001}, "MaxBatchSize"},
		{Config[*sql.Tx]{Scope: "s", Handler: h, MaxAttempts: -1}, "MaxAttempts"},
		{Config[*sql.Tx]{Scope: "s", Handler: h, Linger: -time.Second}, "Linger"},
		{Config[*sql.Tx]{Scope: "s", Handler: h, Concurrency: -2}, "Concurrency"},
		{Config[*sql.Tx]{Scope: "s", Handler: h, Hooks: []Hook{42}}, "Hooks[0]"},
	} {
		_, err := NewProcessor[*sql.Tx](nopDriver{}, tc.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("NewProcessor(%+v) = %v, want a ConfigError naming %s", tc.cfg, err, tc.field)
		}
	}
	if _, err := NewProcessor[*sql.Tx](nil, Config[*sql.Tx]{Scope: "s", Handler: h}); err == nil {
		t.Error("NewProcessor with a nil driver succeeded")
	}
}

func TestDefaultBackoff(t *testing.T) {
	for _, tc := range []struct {
		attempts int
		min, max time.Duration
	}{
		{0, time.Second, 1200 * time.Millisecond},
		{1, time.Second, 1200 * time.Millisecond},
		{3, 4 * time.Second, 4800 * time.Millisecond},
		{9, 256 * time.Second, 300 * time.Second * 12 / 10},
		{50, 5 * time.Minute, 6 * time.Minute},
	} {
		for range 20 {
			if d := DefaultBackoff(tc.attempts); d < tc.min || d > tc.max {
				t.Errorf("DefaultBackoff(%d) = %v, want in [%v, %v]", tc.attempts, d, tc.min, tc.max)
			}
		}
	}
}

func TestOutcomeAck(t *testing.T) {
	for o, want := range map[Outcome]bool{Processed: true, Duplicate: true, Drift: true, DeadLettered: true, Retry: false, 0: false} {
		if o.Ack() != want {
			t.Errorf("%v.Ack() = %v, want %v", o, o.Ack(), want)
		}
	}
	if Outcome(99).String() != "outcome(99)" || DeadLettered.String() != "dead_lettered" {
		t.Error("Outcome.String")
	}
}

func TestPermanentUnwraps(t *testing.T) {
	base := errors.New("no partner")
	err := Permanent(base)
	var pe *PermanentError
	if !errors.As(err, &pe) || !errors.Is(err, base) || Permanent(nil) != nil {
		t.Errorf("Permanent(%v) = %v", base, err)
	}
}
