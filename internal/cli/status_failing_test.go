package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

// failingAndDead processes, in scope s, message ok, message retried, which
// fails once (Retry), and message poison, which fails for good (a dead
// letter), through d.
func failingAndDead[TTx any](t *testing.T, d store.Driver[TTx]) {
	t.Helper()
	p, err := txinbox.NewProcessor(d, txinbox.Config[TTx]{Scope: "s",
		Logger: slog.New(slog.DiscardHandler),
		Handler: func(_ context.Context, _ TTx, m *txinbox.Message) error {
			switch m.ID {
			case "retried":
				return errors.New("partner down")
			case "poison":
				return txinbox.Permanent(errors.New("unparsable"))
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []*txinbox.Message{{ID: "ok"}, {ID: "retried"}, {ID: "poison"}}
	if _, err := p.Process(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
}

// wantFailingOnce checks status's text and JSON: the dead letter counts
// under DEAD LETTERS only, the retried message under FAILING.
func wantFailingOnce(t *testing.T, db string, flags ...string) {
	t.Helper()
	out, errs, code := run(t, append([]string{"status", "--db", db, "--json"}, flags...)...)
	var st struct {
		Attempts, DeadLetters int64
		Scopes                []struct{ Failing, DeadLetters int64 }
	}
	if code != 0 || json.Unmarshal([]byte(strings.ReplaceAll(out, "dead_letters", "deadletters")), &st) != nil || len(st.Scopes) != 1 {
		t.Fatalf("status --json: %d %q %q", code, out, errs)
	}
	if st.Attempts != 1 || st.DeadLetters != 1 || st.Scopes[0].Failing != 1 || st.Scopes[0].DeadLetters != 1 {
		t.Errorf("status --json: want 1 failing (retried) and 1 dead letter (poison), counted once each:\n%s", out)
	}
	out, errs, code = run(t, append([]string{"status", "--db", db}, flags...)...)
	if code != 0 || !regexp.MustCompile(`\nfailing messages \(retried, not processed yet\) +1\n`).MatchString(out) ||
		!regexp.MustCompile(`\ndead letters \(not dropped\) +1\n`).MatchString(out) {
		t.Errorf("status totals: want 1 failing and 1 dead letter: %d %q\n%s", code, errs, out)
	}
	for line := range strings.SplitSeq(out, "\n") {
		// SCOPE INBOX EXPIRED OLDEST FAILING DEAD-LETTERS DRIFT
		if f := strings.Fields(line); len(f) == 7 && f[0] == "s" && (f[4] != "1" || f[5] != "1") {
			t.Errorf("status scope row %q: want FAILING 1 and DEAD LETTERS 1:\n%s", line, out)
		}
	}
}

// TestStatusDeadLetterNotFailing: a dead-lettered message counts under
// DEAD LETTERS only, not under FAILING too (its attempts row stays).
func TestStatusDeadLetterNotFailing(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db, d := migratedSQLite(t)
		failingAndDead(t, d)
		d.Close()
		wantFailingOnce(t, db)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		pool := testdb.Require(t)
		schema := testdb.NewSchema(t, pool)
		d, err := pgstore.New(pool, pgstore.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		failingAndDead[pgx.Tx](t, d)
		wantFailingOnce(t, testdb.URL(), "--schema", schema)
	})
}
