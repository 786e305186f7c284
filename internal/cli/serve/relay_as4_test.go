package serve_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4sqlite"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// as4Partner is a real txinbox AS4 endpoint on its own SQLite file; it
// returns the endpoint's URL, a counter of its inbox rows and the file.
func as4Partner(t *testing.T) (string, func() int, string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "partner.db")
	d, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	st, err := as4sqlite.New(d.DB(), as4sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := as4.New(d, as4.Config[*sql.Tx]{Store: st, Inbox: txinbox.Config[*sql.Tx]{Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	return srv.URL, func() int {
		var n int
		if err := d.DB().QueryRow(`SELECT count(*) FROM ` + d.Tables().Inbox).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}, path
}

// sqliteExec runs statements on a SQLite file.
func sqliteExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	d, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, s := range stmts {
		if _, err := d.DB().Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestRelayToAS4Partner(t *testing.T) {
	db := outboxRows(t, 3, false)
	url, received, _ := as4Partner(t)
	args := []string{"relay", "--db", db, "--target", "as4", "--as4-url", url, "--as4-from", "urn:oasis:names:tc:ebcore:partyid-type:iso6523:0088:4012345000009",
		"--as4-to", "partner", "--as4-service", "urn:txinbox:invoic", "--as4-action", "Deliver", "--once"}
	if out, errs, code := run(t, args...); code != 0 || !strings.Contains(out, "sent 3, retrying 0, failed 0") {
		t.Fatalf("relay --target as4: %d %q %q", code, out, errs)
	}
	if n := received(); n != 3 {
		t.Fatalf("partner inbox rows = %d, want 3", n)
	}
	// The rows are sent again (as after a crash before they were marked
	// sent): the derived MessageIds make them the partner's duplicates.
	sqliteExec(t, db, `UPDATE txinbox_outbox SET sent_at = NULL, receipt = NULL`)
	if out, errs, code := run(t, args...); code != 0 || !strings.Contains(out, "sent 3,") {
		t.Fatalf("relay again: %d %q %q", code, out, errs)
	}
	if n := received(); n != 3 {
		t.Errorf("partner inbox rows after the resend = %d, want still 3", n)
	}
}

func TestRelayAS4FlagErrors(t *testing.T) {
	db := outboxRows(t, 1, false)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--as4-from", "a", "--as4-to", "b", "--as4-service", "s", "--as4-action", "x"}, "--as4-url"},
		{[]string{"--as4-url", "http://127.0.0.1:1/as4", "--as4-to", "b", "--as4-service", "s", "--as4-action", "x"}, "--as4-from"},
		{[]string{"--as4-url", "http://127.0.0.1:1/as4", "--as4-from", "a", "--as4-to", "b", "--as4-service", "s", "--as4-action", "x",
			"--as4-message-id-domain", "bad domain"}, "--as4-message-id-domain"},
	} {
		_, errs, code := run(t, append([]string{"relay", "--db", db, "--target", "as4", "--once"}, c.args...)...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want it to name %s", c.args, code, errs, c.want)
		}
	}
}

// TestPurgeTakesAS4MessagesAndSentOutboxRows: txinbox purge deletes, with
// the inbox rows, the AS4 messages past the retention (at the partner) and
// the sent outbox rows past it (at the sender), never an unsent one; the
// dry run counts them.
func TestPurgeTakesAS4MessagesAndSentOutboxRows(t *testing.T) {
	db := outboxRows(t, 4, false)
	url, _, partner := as4Partner(t)
	if out, errs, code := run(t, "relay", "--db", db, "--target", "as4", "--as4-url", url, "--as4-from", "a", "--as4-to", "b",
		"--as4-service", "s", "--as4-action", "x", "--once"); code != 0 || !strings.Contains(out, "sent 4,") {
		t.Fatalf("relay: %d %q %q", code, out, errs)
	}
	old := `'2020-01-01T00:00:00.000000000Z'`
	// Sender: three rows sent long ago, one sent now; one more never sent.
	sqliteExec(t, db, `UPDATE txinbox_outbox SET sent_at = `+old+` WHERE message_id IN ('m0', 'm1', 'm2')`,
		`INSERT INTO txinbox_outbox (scope, message_id, part, payload, created_at) VALUES ('s', 'unsent', 0, x'00', `+old+`)`)
	// Partner: two of its four AS4 messages received long ago.
	sqliteExec(t, partner, `UPDATE txinbox_as4_messages SET received_at = `+old+` WHERE message_key IN (SELECT message_key FROM txinbox_as4_messages ORDER BY message_key LIMIT 2)`)

	check := func(path string, dry bool, as4, outbox float64) {
		t.Helper()
		args := []string{"purge", "--db", path, "--json"}
		if dry {
			args = append(args, "--dry-run")
		}
		out, errs, code := run(t, args...)
		var res map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res["as4_messages"] != as4 || res["outbox_sent"] != outbox {
			t.Errorf("%v: %d %q %q, want %v AS4 messages and %v outbox rows", args, code, out, errs, as4, outbox)
		}
	}
	check(db, true, 0, 3)
	check(db, false, 0, 3)
	check(db, false, 0, 0)
	check(partner, true, 2, 0)
	check(partner, false, 2, 0)
	check(partner, true, 0, 0)
	if out, _, _ := run(t, "status", "--db", db, "--json"); !strings.Contains(out, `"sent":1`) || !strings.Contains(out, `"unsent":1`) {
		t.Errorf("status after the purge: %s", out)
	}
}
