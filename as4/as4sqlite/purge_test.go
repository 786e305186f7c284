package as4sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4sqlite"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// TestPurge: messages received before the cutoff go with their payloads,
// newer ones stay, at most limit per batch.
func TestPurge(t *testing.T) {
	ctx := context.Background()
	d, err := sqlitestore.Open(filepath.Join(t.TempDir(), "a.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st, err := as4sqlite.New(d.DB(), as4sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i, at := range []time.Time{now.Add(-40 * 24 * time.Hour), now.Add(-35 * 24 * time.Hour), now.Add(-39 * 24 * time.Hour), now} {
		tx, err := d.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := &as4.Received{Scope: "as4", Key: string(rune('a' + i)), ReceivedAt: at, Fingerprint: []byte{1},
			Receipt: as4.StoredReceipt{Body: []byte("r")},
			Parts:   []as4.Part{{Data: []byte("<Invoice/>")}}}
		if err := st.Save(ctx, tx, m); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	cut := now.Add(-30 * 24 * time.Hour)
	if n, err := st.Purge(ctx, cut, 2); err != nil || n != 2 {
		t.Fatalf("first batch = %d, %v; want 2", n, err)
	}
	if n, err := st.Purge(ctx, cut, 2); err != nil || n != 1 {
		t.Fatalf("second batch = %d, %v; want 1", n, err)
	}
	var msgs, parts int
	if err := d.DB().QueryRow(`SELECT (SELECT count(*) FROM txinbox_as4_messages), (SELECT count(*) FROM txinbox_as4_payloads)`).Scan(&msgs, &parts); err != nil {
		t.Fatal(err)
	}
	if msgs != 1 || parts != 1 {
		t.Errorf("left %d messages, %d payloads; want the newest 1 and its payload", msgs, parts)
	}
}
