package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// growthPoint is txinbox's throughput with the inbox pre-filled.
type growthPoint struct {
	InboxRows     int64   `json:"inbox_rows"`
	MsgsPerSec    float64 `json:"msgs_per_s"`
	P99ms         float64 `json:"p99_ms"`
	VsEmptyInbox  float64 `json:"vs_empty_inbox"`
	PrefillSecond float64 `json:"prefill_seconds"`
}

// batchPoint is txinbox and the ceiling at one batch size.
type batchPoint struct {
	Batch      int     `json:"batch"`
	Txinbox    float64 `json:"txinbox_msgs_per_s"`
	Ceiling    float64 `json:"ceiling_msgs_per_s"`
	VsCeiling  float64 `json:"txinbox_vs_ceiling"`
	TxinboxP99 float64 `json:"txinbox_p99_ms"`
}

func parseCounts(flagName, s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.ParseInt(strings.ReplaceAll(f, "_", ""), 10, 64)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive count", flagName, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// growth measures txinbox on an empty inbox, then with the inbox filled
// (COPY-speed INSERT ... SELECT generate_series) to each size in turn. The
// tables are not emptied between the points; each point adds its own rows.
func (be *benchEnv) growth(ctx context.Context, sizes []int64) ([]growthPoint, error) {
	if err := be.truncate(ctx); err != nil {
		return nil, err
	}
	var out []growthPoint
	var filled int64
	for _, size := range append([]int64{0}, sizes...) {
		start := time.Now()
		if size > filled {
			if err := be.prefill(ctx, filled, size); err != nil {
				return nil, err
			}
			filled = size
		}
		prefill := time.Since(start).Seconds()
		be.progress("txinbox with %d inbox rows...", size)
		one := *be
		one.o.rounds = 1
		r, err := one.txinboxPG(ctx, 0)
		if err != nil {
			return nil, err
		}
		p := growthPoint{InboxRows: size, MsgsPerSec: r.MsgsPerSec, P99ms: r.P99ms, PrefillSecond: prefill}
		if len(out) > 0 && out[0].MsgsPerSec > 0 {
			p.VsEmptyInbox = p.MsgsPerSec / out[0].MsgsPerSec
		} else {
			p.VsEmptyInbox = 1
		}
		out = append(out, p)
	}
	return out, nil
}

// prefill adds inbox rows from..to (exclusive of from) in chunks of one
// million, each its own transaction, then analyzes the table.
func (be *benchEnv) prefill(ctx context.Context, from, to int64) error {
	q := be.driver.Tables().Expand(`INSERT INTO {inbox} (scope, message_id, source, payload_hash, received_at, processed_at)
SELECT 'prefill', 'p-' || g, 'bench', '\x00'::bytea, now(), now() FROM generate_series($1::bigint, $2::bigint) g`)
	for lo := from + 1; lo <= to; lo += 1_000_000 {
		hi := min(lo+999_999, to)
		be.progress("filling the inbox: %d/%d rows...", hi, to)
		if _, err := be.pool.Exec(ctx, q, lo, hi); err != nil {
			return fmt.Errorf("filling the inbox: %w", err)
		}
	}
	_, err := be.pool.Exec(ctx, be.driver.Tables().Expand("ANALYZE {inbox}"))
	return err
}

// batchSweep measures txinbox and the ceiling at each batch size,
// interleaved in rounds like the main scenarios.
func (be *benchEnv) batchSweep(ctx context.Context, sizes []int64) ([]batchPoint, error) {
	var out []batchPoint
	for _, n := range sizes {
		one := *be
		one.o.batch = int(n)
		var tx, ceil *benchResult
		for round := range be.o.rounds {
			be.progress("batch size %d, round %d/%d...", n, round+1, be.o.rounds)
			for _, run := range []func() error{
				func() error { r, err := one.txinboxPG(ctx, 0); tx = tx.merge(r); return err },
				func() error { r, err := one.ceiling(ctx, 0); ceil = ceil.merge(r); return err },
			} {
				if err := be.truncate(ctx); err != nil {
					return nil, err
				}
				if err := run(); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, batchPoint{Batch: int(n), Txinbox: tx.MsgsPerSec, Ceiling: ceil.MsgsPerSec,
			VsCeiling: tx.MsgsPerSec / ceil.MsgsPerSec, TxinboxP99: tx.P99ms})
	}
	return out, nil
}
