package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/outbox"
)

// TestHeadersKeepOrderRepeatsAndBytes writes headers no JSON object and no
// jsonb string can hold as they are (a repeated key, a NUL, invalid
// UTF-8) and checks that the target gets them back exactly, in order.
func TestHeadersKeepOrderRepeatsAndBytes(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		hs := []outbox.Header{{Key: "b", Value: "1"}, {Key: "a", Value: "x\x00y"}, {Key: "b", Value: "2"},
			{Key: "bin", Value: "\xff\xfe\x00"}, {Key: "empty", Value: ""}}
		d.add(t, outbox.Entry{Scope: "s", MessageID: "m1", Headers: hs, Payload: []byte("p")})
		rec := newRecorder(false)
		var got []outbox.Header
		rec.fail = func(m *outbox.Message) error { got = m.Headers; return nil }
		if n, err := newRelay(t, d.store, outbox.Config{Target: rec, Logger: discard}).RunOnce(context.Background()); n != 1 || err != nil {
			t.Fatalf("RunOnce = %d, %v", n, err)
		}
		if !slices.Equal(got, hs) {
			t.Errorf("target got headers %q, want %q", got, hs)
		}
	})
}

// TestUnreadableRowFailsAloneWithItsReason puts rows the relay cannot read
// between good ones: the good ones are sent in the same run, the bad ones
// fail for good at once, without a send, and ListFailed says why. A row
// in the object form of earlier versions is still read.
func TestUnreadableRowFailsAloneWithItsReason(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		d.add(t, entries(5, 0)...)
		d.exec(t, `UPDATE `+d.table+` SET headers = '[1, 2]' WHERE message_id = 'm1'`)
		d.exec(t, `UPDATE `+d.table+` SET headers = '{"h": "legacy", "a": "b"}' WHERE message_id = 'm2'`)
		d.exec(t, `UPDATE `+d.table+` SET headers = '[{"key": "k", "value_base64": "not base64!"}]' WHERE message_id = 'm3'`)
		want := map[string]string{"s/m1/0": "headers column", "s/m3/0": "value_base64"}
		if d.kind == "sqlite" { // SQLite keeps text in an INTEGER column: a row that does not scan
			d.exec(t, `UPDATE `+d.table+` SET part = 'zero' WHERE message_id = 'm4'`)
			want["s/m4/0"] = "reading the row"
		}
		rec := newRecorder(false)
		var legacy []outbox.Header
		rec.fail = func(m *outbox.Message) error {
			if m.MessageID == "m2" {
				legacy = m.Headers
			}
			return nil
		}
		n, err := newRelay(t, d.store, outbox.Config{Target: rec, BatchSize: 10, Logger: discard}).RunOnce(context.Background())
		if err != nil || n != 5-len(want) {
			t.Fatalf("RunOnce = %d, %v; want %d sent", n, err, 5-len(want))
		}
		if l := []outbox.Header{{Key: "a", Value: "b"}, {Key: "h", Value: "legacy"}}; !slices.Equal(legacy, l) {
			t.Errorf("object-form headers read as %q, want %q", legacy, l)
		}
		for id := range want {
			if rec.attempts[id] != 0 && id != "s/m4/0" {
				t.Errorf("unreadable row %s was sent", id)
			}
		}
		failed, err := d.store.ListFailed(context.Background(), 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(failed) != len(want) {
			t.Fatalf("ListFailed = %+v, want %d rows", failed, len(want))
		}
		for _, f := range failed {
			id := fmt.Sprintf("s/%s/0", f.MessageID)
			if d.kind == "sqlite" && f.ID == 5 {
				id = "s/m4/0"
			}
			if w, ok := want[id]; !ok || !strings.Contains(f.LastError, w) || !strings.Contains(f.LastError, "cannot be read") {
				t.Errorf("failed row %s: last error %q, want it to say %q", id, f.LastError, w)
			}
		}
	})
}

// TestErrorTextAnyBytesIsRecorded has the target fail with an error that
// quotes a NUL and invalid UTF-8, as one quoting a row's bytes might: the
// retry must be recorded (a text column refuses those bytes), not make the
// whole batch fail to record, again and again.
func TestErrorTextAnyBytesIsRecorded(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		d.add(t, entries(3, 0)...)
		rec := newRecorder(false)
		rec.fail = func(m *outbox.Message) error {
			if m.MessageID == "m1" {
				return outbox.Permanent(errors.New("refused \x00 and \xff"))
			}
			return nil
		}
		if n, err := newRelay(t, d.store, outbox.Config{Target: rec, Logger: discard}).RunOnce(context.Background()); n != 2 || err != nil {
			t.Fatalf("RunOnce = %d, %v; want 2 sent and no error", n, err)
		}
		failed, err := d.store.ListFailed(context.Background(), 10)
		if err != nil || len(failed) != 1 || !strings.Contains(failed[0].LastError, `refused \x00 and `) {
			t.Fatalf("ListFailed = %+v, %v", failed, err)
		}
	})
}
