package cli_test

import (
	"context"
	"database/sql"
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
// returns the endpoint's URL and a counter of its inbox rows.
func as4Partner(t *testing.T) (string, func() int) {
	t.Helper()
	ctx := context.Background()
	d, err := sqlitestore.Open(filepath.Join(t.TempDir(), "partner.db"), sqlitestore.Options{})
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
	}
}

func TestRelayToAS4Partner(t *testing.T) {
	db := outboxRows(t, 3, false)
	url, received := as4Partner(t)
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
	d, err := sqlitestore.Open(db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.DB().Exec(`UPDATE ` + d.Tables().Outbox + ` SET sent_at = NULL, receipt = NULL`); err != nil {
		t.Fatal(err)
	}
	d.Close()
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
