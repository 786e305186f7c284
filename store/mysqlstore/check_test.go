package mysqlstore_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// newDriver is a migrated driver on a database of its own.
func newDriver(t *testing.T) *mysqlstore.Driver {
	t.Helper()
	d, err := mysqlstore.New(mysqltest.Open(t, mysqltest.NewDatabase(t), 8), mysqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestKeysCompareBytes: ids that a case-insensitive or PAD SPACE
// collation would take for one ("A" and "a", "a" and "a "), and 4-byte
// UTF-8 (which a utf8mb3 column refuses), are distinct keys, each
// processed once and stored as sent; a key column altered to a
// case-insensitive collation stops Migrate, naming it.
func TestKeysCompareBytes(t *testing.T) {
	ctx := context.Background()
	d := newDriver(t)
	if _, err := d.DB().Exec("CREATE TABLE effects (id VARBINARY(255) NOT NULL) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: "s📦", Handler: func(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO effects VALUES (?)", m.ID)
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ids := []string{"A", "a", "a ", "\u00e9", "e\u0301", "\U0001F4E6-1"} // é composed and decomposed, a 4-byte character
	var msgs []*txinbox.Message
	for _, id := range ids {
		msgs = append(msgs, &txinbox.Message{ID: id, Payload: []byte("x")})
	}
	res, err := p.Process(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Outcome != txinbox.Processed {
			t.Errorf("%q: %v %v, want processed (a distinct key)", ids[i], r.Outcome, r.Err)
		}
	}
	var n int
	if err := d.DB().QueryRow("SELECT count(DISTINCT id) FROM effects").Scan(&n); err != nil || n != len(ids) {
		t.Errorf("%d distinct effects, %v; want %d", n, err, len(ids))
	}
	for _, id := range ids {
		in, err := d.Inspect(ctx, txinboxKey("s📦", id))
		if err != nil || in.Inbox == nil {
			t.Errorf("Inspect(%q) = %+v, %v", id, in.Inbox, err)
		}
	}
	if _, err := d.DB().Exec("ALTER TABLE " + d.Tables().Inbox + " MODIFY message_id VARCHAR(500) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL"); err == nil {
		t.Fatal("the ALTER worked on duplicate keys")
	}
	if _, err := d.DB().Exec("DELETE FROM " + d.Tables().Inbox); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DB().Exec("ALTER TABLE " + d.Tables().Inbox + " MODIFY message_id VARCHAR(500) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL"); err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(ctx); err == nil || !strings.Contains(err.Error(), "message_id is varchar utf8mb4_general_ci") {
		t.Errorf("Migrate on a case-insensitive key column = %v, want it refused by name", err)
	}
}

// TestSettingsWarnings reads the server's settings and says plainly the
// ones that lose committed rows.
func TestSettingsWarnings(t *testing.T) {
	d := newDriver(t)
	s, err := d.ReadSettings(context.Background())
	if err != nil || s.Version == "" || s.Isolation == "" {
		t.Fatalf("ReadSettings = %+v, %v", s, err)
	}
	t.Logf("%+v", s)
	for _, tc := range []struct {
		s    mysqlstore.Settings
		want string
	}{
		{mysqlstore.Settings{FlushLogAtTrxCommit: 1}, ""},
		{mysqlstore.Settings{FlushLogAtTrxCommit: 2}, "crash of the machine"},
		{mysqlstore.Settings{FlushLogAtTrxCommit: 0}, "crash of the server process"},
		{mysqlstore.Settings{FlushLogAtTrxCommit: 1, LogBin: true, SyncBinlog: 0}, "sync_binlog=0"},
		{mysqlstore.Settings{FlushLogAtTrxCommit: 1, LogBin: false, SyncBinlog: 0}, ""},
	} {
		w := strings.Join(tc.s.Warnings(), "\n")
		if (tc.want == "") != (w == "") || !strings.Contains(w, tc.want) {
			t.Errorf("%+v: warnings %q, want %q", tc.s, w, tc.want)
		}
	}
}

func txinboxKey(scope, id string) store.Key { return store.Key{Scope: scope, MessageID: id} }
