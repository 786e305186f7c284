package topology

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestRefuseNamesTheStore: Refuse's errors start with the store that asks
// and the search_path fix names that store's Options.Schema, for pgstore
// and pgdbstore alike (the two share this code; neither's message may
// name the other).
func TestRefuseNamesTheStore(t *testing.T) {
	for _, c := range []struct{ store, other string }{{"pgstore", "pgdbstore"}, {"pgdbstore", "pgstore"}} {
		for _, u := range []string{
			"postgres://u@127.0.0.1:6432/db?default_query_exec_mode=exec&search_path=inbox",
			"postgres://u@127.0.0.1:6432/db?default_query_exec_mode=cache_statement",
			"postgres://u@127.0.0.1:6432/db?default_query_exec_mode=describe_exec",
		} {
			cfg, err := pgx.ParseConfig(u)
			if err != nil {
				t.Fatal(err)
			}
			err = Refuse(cfg, c.store)
			if err == nil {
				t.Fatalf("%s: Refuse(%s) = nil; want a *PoolerError", c.store, u)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, c.store+": ") || strings.Contains(msg, c.other+":") || strings.Contains(msg, c.other+".") {
				t.Errorf("%s: Refuse(%s) = %q; want it to start with %q and not name %s", c.store, u, msg, c.store+": ", c.other)
			}
			if strings.Contains(u, "search_path") && !strings.Contains(msg, c.store+".Options.Schema") {
				t.Errorf("%s: Refuse(%s) = %q; want the fix to name %s.Options.Schema", c.store, u, msg, c.store)
			}
		}
	}
	cfg, err := pgx.ParseConfig("postgres://u@127.0.0.1:6432/db?default_query_exec_mode=cache_describe&application_name=a")
	if err != nil {
		t.Fatal(err)
	}
	if err := Refuse(cfg, "pgstore"); err != nil {
		t.Errorf("cache_describe with application_name refused: %v", err)
	}
}
