package kafka

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source"
)

// scriptedOffsets is a source.OffsetProcessor whose ProcessOffsets answers
// from a script: each call returns the next step's outcomes, checkpoint
// and error, and records the Saved it was given.
type scriptedOffsets struct {
	source.Processor
	steps []offsetsStep
	saved []int64
}

type offsetsStep struct {
	outcomes []txinbox.Outcome
	saved    int64
	err      error
}

func (p *scriptedOffsets) ProcessOffsets(_ context.Context, msgs []*txinbox.Message, cp txinbox.OffsetCheckpoint) ([]txinbox.Result, int64, error) {
	step := p.steps[len(p.saved)]
	p.saved = append(p.saved, cp.Saved)
	res := make([]txinbox.Result, len(msgs))
	for i, o := range step.outcomes {
		res[i] = txinbox.Result{Outcome: o}
	}
	return res, step.saved, step.err
}

// TestWatermarkIsWhatProcessOffsetsReturned: with OffsetWatermark the
// partition's watermark is the checkpoint ProcessOffsets returned, not a
// count the consumer keeps of its own: it is the Saved of the next call
// and decides which records fetched again are known duplicates. The
// script's third step returns a checkpoint past the records it acked (as
// if the store knew more than the chunk): a consumer that derives its
// watermark from the acked records fails there.
func TestWatermarkIsWhatProcessOffsetsReturned(t *testing.T) {
	t.Parallel()
	ok, retry := txinbox.Processed, txinbox.Retry
	proc := &scriptedOffsets{steps: []offsetsStep{
		{outcomes: []txinbox.Outcome{ok, ok, ok}, saved: 12},
		{outcomes: []txinbox.Outcome{ok, retry}, saved: 13},
		{outcomes: []txinbox.Outcome{ok}, saved: 20},
		{err: errors.New("the database is gone"), saved: 20},
	}}
	c := &Consumer{cfg: Config{Key: OffsetWatermark, Logger: slog.New(slog.DiscardHandler), ErrorBackoff: txinbox.DefaultBackoff},
		proc: proc, offsets: proc,
		batch: 10, parts: map[topicPartition]*partitionState{}}
	tp := topicPartition{"t", 1}
	c.setWatermark(tp, 9) // read at assignment
	recs := func(from, to int64) []*kgo.Record {
		var out []*kgo.Record
		for o := from; o <= to; o++ {
			out = append(out, &kgo.Record{Topic: tp.topic, Partition: tp.partition, Offset: o})
		}
		return out
	}
	for i, chunk := range [][]*kgo.Record{recs(10, 12), recs(13, 14), recs(14, 14), recs(21, 22)} {
		c.processPartition(context.Background(), nil, kgo.FetchTopicPartition{Topic: tp.topic,
			FetchPartition: kgo.FetchPartition{Partition: tp.partition, Records: chunk}})
		if got, want := c.watermark(tp), proc.steps[i].saved; got != want {
			t.Errorf("after step %d: watermark %d, want %d (what ProcessOffsets returned)", i, got, want)
		}
	}
	if want := []int64{9, 12, 13, 20}; !slices.Equal(proc.saved, want) {
		t.Errorf("ProcessOffsets was given Saved %v, want %v", proc.saved, want)
	}
	if n := c.knownDuplicates(tp, recs(15, 22)); n != 6 {
		t.Errorf("%d known duplicates among 15..22, want 6 (at or below the returned checkpoint 20)", n)
	}
}

// TestOffsetWatermarkNeedsOffsetProcessor: New refuses OffsetWatermark
// with a processor that is not a source.OffsetProcessor, naming Key.
func TestOffsetWatermarkNeedsOffsetProcessor(t *testing.T) {
	t.Parallel()
	cfg := Config{Seeds: []string{"127.0.0.1:1"}, Topics: []string{"t"}, Group: "g", Key: OffsetWatermark}
	_, err := New(settingsOnly{}, cfg)
	var ce *txinbox.ConfigError
	if !errors.As(err, &ce) || ce.Field != "Key" {
		t.Fatalf("New with OffsetWatermark and no ProcessOffsets: %v, want a ConfigError on Key", err)
	}
	cfg.Key = OffsetKey
	if _, err := New(settingsOnly{}, cfg); err != nil {
		t.Fatalf("New with OffsetKey and no ProcessOffsets: %v", err)
	}
}

// settingsOnly is a source.Processor without ProcessOffsets that answers
// Settings alone, as New reads them.
type settingsOnly struct{ source.Processor }

func (settingsOnly) Settings() txinbox.Settings {
	return txinbox.Settings{MaxBatchSize: 10, Ordered: true}
}
