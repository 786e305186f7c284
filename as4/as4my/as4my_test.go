package as4my_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4my"
	"github.com/txinbox/txinbox/internal/mysqltest"
)

func newStore(t *testing.T) (*as4my.Store, *sql.DB) {
	t.Helper()
	db := mysqltest.Open(t, mysqltest.NewDatabase(t), 4)
	st, err := as4my.New(db, as4my.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st, db
}

func save(t *testing.T, st *as4my.Store, db *sql.DB, m *as4.Received) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // an open transaction would hold the database's drop at cleanup
	if err := st.Save(ctx, tx, m); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func received(key string, at time.Time, parts int) *as4.Received {
	m := &as4.Received{Scope: "as4", Key: key, ReceivedAt: at, Fingerprint: []byte{1},
		Receipt: as4.StoredReceipt{MessageID: "r-" + key, Body: []byte("receipt of " + key)}}
	for range parts {
		m.Parts = append(m.Parts, as4.Part{Data: []byte("<Invoice/>")})
	}
	return m
}

func count(t *testing.T, db *sql.DB, q string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPurge: messages received before the cutoff go with their payloads
// (ON DELETE CASCADE), newer ones stay, at most limit per batch; Exists
// and Expired say what a purge would do.
func TestPurge(t *testing.T) {
	ctx := context.Background()
	st, db := newStore(t)
	if ok, err := st.Exists(ctx); err != nil || ok {
		t.Fatalf("Exists before Migrate = %v, %v", ok, err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.Exists(ctx); err != nil || !ok {
		t.Fatalf("Exists after Migrate = %v, %v", ok, err)
	}
	now := time.Now()
	for i, at := range []time.Time{now.Add(-40 * 24 * time.Hour), now.Add(-35 * 24 * time.Hour), now.Add(-39 * 24 * time.Hour), now} {
		save(t, st, db, received(string(rune('a'+i)), at, 2))
	}
	cut := now.Add(-30 * 24 * time.Hour)
	if n, err := st.Expired(ctx, cut); err != nil || n != 3 {
		t.Fatalf("Expired = %d, %v; want 3", n, err)
	}
	if n, err := st.Purge(ctx, cut, 2); err != nil || n != 2 {
		t.Fatalf("first batch = %d, %v; want 2", n, err)
	}
	if n, err := st.Purge(ctx, cut, 2); err != nil || n != 1 {
		t.Fatalf("second batch = %d, %v; want 1", n, err)
	}
	msgs, parts := count(t, db, "SELECT count(*) FROM txinbox_as4_messages"), count(t, db, "SELECT count(*) FROM txinbox_as4_payloads")
	if msgs != 1 || parts != 2 {
		t.Errorf("left %d messages, %d payloads; want the newest 1 and its 2 payloads", msgs, parts)
	}
}

// TestSaveReplacesAndLists: a Save over a key left behind (its inbox row
// purged) replaces the message and its payloads; the listing counts each
// message's payloads, filters by scope and time, and reads the time back
// in UTC to the microsecond.
func TestSaveReplacesAndLists(t *testing.T) {
	ctx := context.Background()
	st, db := newStore(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 6, 10, 0, 0, 123456000, time.FixedZone("CET", 3600))
	save(t, st, db, received("k", at, 3))
	m := received("k", at.Add(time.Second), 1)
	m.Receipt.Body = []byte("the second receipt")
	save(t, st, db, m)
	save(t, st, db, received("older", at.Add(-time.Hour), 0))
	if n := count(t, db, "SELECT count(*) FROM txinbox_as4_payloads"); n != 1 {
		t.Errorf("%d payloads after the replacing Save, want 1", n)
	}
	r, err := st.Receipt(ctx, "as4", "k")
	if err != nil || string(r.Body) != "the second receipt" {
		t.Errorf("Receipt = %q, %v", r.Body, err)
	}
	if _, err := st.Receipt(ctx, "as4", "K"); err != as4.ErrNotFound {
		t.Errorf("Receipt of K = %v, want ErrNotFound (keys compared byte for byte)", err)
	}
	l, err := st.ListMessages(ctx, as4.ListFilter{})
	if err != nil || len(l) != 2 || l[0].Key != "k" || l[0].Parts != 1 || !l[0].ReceivedAt.Equal(at.Add(time.Second)) || l[1].Key != "older" {
		t.Fatalf("ListMessages = %+v, %v", l, err)
	}
	if l, err := st.ListMessages(ctx, as4.ListFilter{Before: at}); err != nil || len(l) != 1 || l[0].Key != "older" {
		t.Errorf("ListMessages before %v = %+v, %v", at, l, err)
	}
	if l, err := st.ListMessages(ctx, as4.ListFilter{Scope: "other"}); err != nil || len(l) != 0 {
		t.Errorf("ListMessages of another scope = %+v, %v", l, err)
	}
}

// TestMigrateRefusesTextKeys: a key column changed to a case-insensitive
// text type stops Migrate (and so serve's start), naming the column.
func TestMigrateRefusesTextKeys(t *testing.T) {
	ctx := context.Background()
	st, db := newStore(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("ALTER TABLE txinbox_as4_messages MODIFY message_key VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL"); err != nil {
		t.Fatal(err)
	}
	err := st.Migrate(ctx)
	if err == nil || !strings.Contains(err.Error(), "txinbox_as4_messages.message_key is varchar utf8mb4_general_ci") {
		t.Fatalf("Migrate over a text key column = %v", err)
	}
}
