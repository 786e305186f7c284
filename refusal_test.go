package txinbox_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// TestRefusalDeadLettersANewMessage: a new message with a Refusal (a
// source's delivery-count guard) is dead-lettered with it and its handler
// never runs, while the rest of its batch is processed; a duplicate of a
// committed message stays a Duplicate whatever its Refusal. With a
// BatchHandler the batch is redone one message at a time.
func TestRefusalDeadLettersANewMessage(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "Handler", true: "BatchHandler"}[batch], func(t *testing.T) {
			d, err := sqlitestore.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlitestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			ctx := context.Background()
			if err := d.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			ran := map[string]int{}
			cfg := txinbox.Config[*sql.Tx]{Scope: "s", Logger: slog.New(slog.DiscardHandler)}
			if batch {
				cfg.BatchHandler = func(_ context.Context, _ *sql.Tx, msgs []*txinbox.Message) error {
					for _, m := range msgs {
						ran[m.ID]++
					}
					return nil
				}
			} else {
				cfg.Handler = func(_ context.Context, _ *sql.Tx, m *txinbox.Message) error { ran[m.ID]++; return nil }
			}
			proc, err := txinbox.NewProcessor(d, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := proc.Process(ctx, []*txinbox.Message{{ID: "done", Payload: []byte("x")}}); err != nil {
				t.Fatal(err)
			}
			tooOften := txinbox.Permanent(errors.New("delivered 3 times, more than MaxDeliveries (2)"))
			res, err := proc.Process(ctx, []*txinbox.Message{
				{ID: "new", Payload: []byte("x"), Refusal: tooOften},
				{ID: "ok", Payload: []byte("x")},
				{ID: "done", Payload: []byte("x"), Refusal: tooOften},
			})
			if err != nil {
				t.Fatal(err)
			}
			want := []txinbox.Outcome{txinbox.DeadLettered, txinbox.Processed, txinbox.Duplicate}
			for i, r := range res {
				if r.Outcome != want[i] {
					t.Errorf("result %d: %v, want %v", i, r.Outcome, want[i])
				}
			}
			if ran["new"] != 0 || ran["ok"] != 1 {
				t.Errorf("handler runs %v: want none for the refused message, one for ok", ran)
			}
			dls, err := d.ListDeadLetters(ctx, store.ListFilter{})
			if err != nil || len(dls) != 1 || dls[0].Key.MessageID != "new" || dls[0].LastError != tooOften.Error() {
				t.Errorf("dead letters %+v (%v), want new with the refusal", dls, err)
			}
		})
	}
}
