package storetest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store"
)

// testHostileInputs sends values that the database cannot store as text
// (a NUL, invalid UTF-8, a key longer than the primary key's index takes)
// between innocent messages: the bad one is refused alone, dead-lettered
// in a form the database holds with its raw bytes in a header, and the
// others commit. Both stores refuse the same messages.
func testHostileInputs[TTx any](f *fixture[TTx]) {
	cases := []struct {
		name  string
		field string // the txinbox-raw- header, "" for none
		raw   string
		edit  func(m *txinbox.Message)
	}{
		{"NULInID", "id", "inv-\x003", func(m *txinbox.Message) { m.ID = "inv-\x003" }},
		{"InvalidUTF8InID", "id", "inv-\xff\xfe3", func(m *txinbox.Message) { m.ID = "inv-\xff\xfe3" }},
		{"IDTooLong", "id", "", func(m *txinbox.Message) { m.ID = strings.Repeat("x", 3000) }},
		{"NULInScope", "scope", scope + "\x00", func(m *txinbox.Message) { m.Scope = scope + "\x00" }},
		{"NULInSource", "source", "invo\x00ices", func(m *txinbox.Message) { m.Source = "invo\x00ices" }},
		{"InvalidUTF8InSource", "source", "\xc3(", func(m *txinbox.Message) { m.Source = "\xc3(" }},
		{"NULInPartitionKey", "partition_key", "p\x00", func(m *txinbox.Message) { m.PartitionKey = "p\x00" }},
		{"InvalidUTF8InPosition", "source_position", "0:\xff", func(m *txinbox.Message) { m.SourcePosition = "0:\xff" }},
	}
	for _, tc := range cases {
		f.t.Run(tc.name, func(t *testing.T) {
			g := newFixture(t, f.h)
			p := g.processor(txinbox.Config[TTx]{}, nil)
			batch := func() []*txinbox.Message {
				bad := msg("inv-3", "C")
				tc.edit(bad)
				return []*txinbox.Message{msg("inv-1", "A"), msg("inv-2", "B"), bad, msg("inv-4", "D")}
			}
			for round := 1; round <= 2; round++ {
				res, err := p.Process(g.ctx, batch())
				if err != nil {
					t.Fatalf("round %d: Process: %v (the bad message must be refused alone)", round, err)
				}
				innocent := txinbox.Processed
				if round == 2 {
					innocent = txinbox.Duplicate
				}
				wantOutcomes(t, res, innocent, innocent, txinbox.DeadLettered, innocent)
				if !errors.Is(res[2].Err, txinbox.ErrInvalidMessage) {
					t.Errorf("round %d: bad message err = %v, want ErrInvalidMessage", round, res[2].Err)
				}
			}
			g.wantEffects(map[string]int{scope + "/inv-1": 1, scope + "/inv-2": 1, scope + "/inv-4": 1})
			dls, err := g.d.(store.Admin).ListDeadLetters(g.ctx, store.ListFilter{})
			if err != nil || len(dls) != 1 {
				t.Fatalf("dead letters = %d, %v; want 1 (a redelivery is refused again, not stored twice)", len(dls), err)
			}
			dl := dls[0]
			for _, s := range []string{dl.Scope, dl.MessageID, dl.Source, dl.SourcePosition, dl.PartitionKey} {
				if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
					t.Errorf("dead letter holds an unstorable text %q", s)
				}
			}
			if dl.Reason != "invalid message" || !strings.Contains(dl.LastError, "cannot be stored") || string(dl.Payload) != "C" {
				t.Errorf("dead letter = reason %q, last error %q, payload %q", dl.Reason, dl.LastError, dl.Payload)
			}
			raw := rawHeader(t, dl.HeadersJSON, "txinbox-raw-"+tc.field)
			want := tc.raw
			if tc.name == "IDTooLong" {
				want = strings.Repeat("x", 3000)
			}
			if raw != want {
				t.Errorf("raw %s kept as %q, want %q", tc.field, raw, want)
			}
		})
	}
	f.t.Run("NULInHeaderAndError", func(t *testing.T) {
		// Nothing refused: the header only matters once the message is
		// dead-lettered, with a handler error that has a NUL too.
		g := newFixture(t, f.h)
		p := g.processor(txinbox.Config[TTx]{}, func(m *txinbox.Message) error {
			if m.ID == "inv-2" {
				return txinbox.Permanent(errors.New("partner sent \x00\xff"))
			}
			return nil
		})
		bad := msg("inv-2", "B")
		bad.Headers = append(bad.Headers, txinbox.Header{Key: "bin\xff", Value: "a\x00b"})
		res, err := p.Process(g.ctx, []*txinbox.Message{msg("inv-1", "A"), bad, msg("inv-3", "C")})
		if err != nil {
			t.Fatalf("Process: %v", err)
		}
		wantOutcomes(t, res, txinbox.Processed, txinbox.DeadLettered, txinbox.Processed)
		g.wantEffects(map[string]int{scope + "/inv-1": 1, scope + "/inv-3": 1})
		dls, err := g.d.(store.Admin).ListDeadLetters(g.ctx, store.ListFilter{})
		if err != nil || len(dls) != 1 || dls[0].MessageID != "inv-2" {
			t.Fatalf("dead letters = %v, %v; want inv-2", dls, err)
		}
		var hs []map[string]string
		if err := json.Unmarshal(dls[0].HeadersJSON, &hs); err != nil || len(hs) != 2 {
			t.Fatalf("headers %s: %v", dls[0].HeadersJSON, err)
		}
		k, _ := base64.StdEncoding.DecodeString(hs[1]["key_base64"])
		v, _ := base64.StdEncoding.DecodeString(hs[1]["value_base64"])
		if string(k) != "bin\xff" || string(v) != "a\x00b" || hs[0]["value"] != "InvoiceIssued" {
			t.Errorf("headers = %s", dls[0].HeadersJSON)
		}
		if !strings.Contains(dls[0].LastError, "partner sent") {
			t.Errorf("last error = %q", dls[0].LastError)
		}
	})
}

// rawHeader decodes the base64 value of the header named key.
func rawHeader(t *testing.T, headersJSON []byte, key string) string {
	t.Helper()
	var hs []map[string]string
	if err := json.Unmarshal(headersJSON, &hs); err != nil {
		t.Fatalf("headers %s: %v", headersJSON, err)
	}
	for _, h := range hs {
		if h["key"] == key {
			b, err := base64.StdEncoding.DecodeString(h["value"])
			if err != nil {
				t.Fatalf("header %s: %v", key, err)
			}
			return string(b)
		}
	}
	t.Fatalf("no header %s in %s", key, headersJSON)
	return ""
}
