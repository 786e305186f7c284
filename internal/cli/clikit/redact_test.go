package clikit_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// TestRedactNamesEveryHost: the password is left out, and every host of a
// multi-host URL is named once (sslmode=prefer's second try of each host
// is not a host of its own).
func TestRedactNamesEveryHost(t *testing.T) {
	for url, want := range map[string]string{
		"postgres://app:secret@db1:5432/billing?sslmode=disable":                          "postgres://app@db1:5432/billing",
		"postgres://app:secret@db1:5432,db2:5433/billing?target_session_attrs=read-write": "postgres://app@db1:5432,db2:5433/billing",
		"host=db1,db2 port=5432,5433 user=app password=secret dbname=billing":             "postgres://app@db1:5432,db2:5433/billing",
	} {
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		if got := clikit.Redact(cfg); got != want {
			t.Errorf("Redact(%q) = %q, want %q", url, got, want)
		}
	}
}
