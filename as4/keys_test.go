package as4_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/as4"
)

// TestKeysByteForByte: MessageIds of the longest accepted length in
// 4-byte and 2-byte UTF-8 that differ only in the case of one letter are
// two messages, each stored with its id as sent, and the resend of each
// gets its own receipt back: no collation folds the keys (MySQL's key
// columns are binary), and no character is refused (utf8mb4).
func TestKeysByteForByte(t *testing.T) {
	backends(t, options{}, func(t *testing.T, e *endpoint) {
		base := strings.Repeat("😀", 62) + "é" // 250 bytes
		from := "sénder-𝄞"
		var receipts [][]byte
		for _, id := range []string{base + "A@t", base + "a@t"} {
			if len(id) != 253 {
				t.Fatalf("id of %d bytes", len(id))
			}
			m := userMessage{id: id, from: from, payloads: [][]byte{[]byte("<a>" + id + "</a>")}}
			body, ct := m.mime(false)
			r := post(t, e.url, ct, body)
			wantReceipt(t, r, id)
			receipts = append(receipts, r.body)
			if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages WHERE message_id = $1 AND from_party = $2 AND receipt = $3", id, from, r.body); n != 1 {
				t.Errorf("%d messages stored with id %q as sent, want 1", n, id)
			}
		}
		if bytes.Equal(receipts[0], receipts[1]) {
			t.Fatal("the second id got the first one's receipt: the keys were folded")
		}
		for i, id := range []string{base + "A@t", base + "a@t"} {
			m := userMessage{id: id, from: from, payloads: [][]byte{[]byte("<a>" + id + "</a>")}}
			body, ct := m.mime(true)
			r := post(t, e.url, ct, body)
			if r.status != http.StatusOK || !bytes.Equal(r.body, receipts[i]) {
				t.Errorf("resend of %q answered %d, not its receipt:\n%s", id, r.status, r.body)
			}
		}
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 2 {
			t.Errorf("%d stored messages, want 2", n)
		}
		if n := e.deliveries.Load(); n != 2 {
			t.Errorf("%d deliveries, want 2", n)
		}
	})
}

// TestKeyPastMySQLsLimit: a From PartyId of 3,000 bytes makes an inbox
// key longer than MySQL's key column (2048 bytes). The database refuses
// the value (1406, not truncated), so the message fails alone: answered
// EBMS:0004, dead-lettered, never delivered nor stored, and its resend is
// refused the same way.
func TestKeyPastMySQLsLimit(t *testing.T) {
	t.Parallel()
	e := newMySQL(t, options{maxAttempts: 1})
	m := userMessage{id: newID(), from: strings.Repeat("p", 3000), payloads: [][]byte{[]byte("<a/>")}}
	body, ct := m.mime(false)
	for range 2 {
		wantError(t, post(t, e.url, ct, body), http.StatusInternalServerError, as4.Other)
	}
	if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages") + e.count(t, "SELECT count(*) FROM txinbox_inbox"); n != 0 {
		t.Errorf("%d rows stored for a key the column cannot hold", n)
	}
	if n := e.count(t, "SELECT count(*) FROM txinbox_dead_letters"); n != 1 {
		t.Errorf("%d dead letters, want 1", n)
	}
	if n := e.deliveries.Load(); n != 0 {
		t.Errorf("%d deliveries, want 0", n)
	}
}
