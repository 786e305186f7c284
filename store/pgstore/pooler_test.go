package pgstore_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgstore"
)

// withMode is u with its default_query_exec_mode replaced by mode (none
// when mode is "").
func withMode(t *testing.T, u, mode string) string {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	q := parsed.Query()
	q.Del("default_query_exec_mode")
	if mode != "" {
		q.Set("default_query_exec_mode", mode)
	}
	parsed.RawQuery = q.Encode()
	return parsed.String()
}

// checkPooler runs CheckPooler on a pool of u.
func checkPooler(t *testing.T, u string, params map[string]string) (pgstore.Pooling, error) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range params {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d.CheckPooler(context.Background())
}

// TestCheckPooler: directly and through PgBouncer's session pool every exec
// mode passes; through its transaction pool cache_statement and
// describe_exec are refused with an error naming them, and the others
// pass.
func TestCheckPooler(t *testing.T) {
	testdb.Require(t)
	tx := testdb.RequirePgBouncer(t)
	session := testdb.RequirePgBouncerSession(t)
	for _, c := range []struct {
		name, url string
		want      pgstore.Pooling
	}{
		{"direct", testdb.URL(), pgstore.Pooling{}},
		{"session", session, pgstore.Pooling{Pooled: true}},
		{"transaction", tx, pgstore.Pooling{Pooled: true, Transaction: true}},
	} {
		for _, mode := range append([]string{""}, execModes...) {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				got, err := checkPooler(t, withMode(t, c.url, mode), nil)
				if got != c.want {
					t.Errorf("found %+v, want %+v", got, c.want)
				}
				refused := c.want.Transaction && (mode == "" || mode == "cache_statement" || mode == "describe_exec")
				var pe *pgstore.PoolerError
				switch {
				case refused && !errors.As(err, &pe):
					t.Fatalf("error %v, want a *PoolerError", err)
				case refused:
					name := "default_query_exec_mode=" + mode
					if mode == "" {
						name = "default_query_exec_mode=cache_statement (pgx's default)"
					}
					if !strings.HasPrefix(err.Error(), "pgstore: ") || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "use cache_describe or exec") {
						t.Errorf("the refusal %q does not name pgstore, %s and the fix", err, name)
					}
				case err != nil:
					t.Fatalf("refused: %v", err)
				}
			})
		}
	}
}

// TestCheckPoolerStartupParameter: a startup parameter PgBouncer does not
// carry over (search_path) is refused behind a transaction pool, naming
// Options.Schema; application_name, which it carries, passes.
func TestCheckPoolerStartupParameter(t *testing.T) {
	testdb.Require(t)
	tx := withMode(t, testdb.RequirePgBouncer(t), "exec")
	if _, err := checkPooler(t, tx, map[string]string{"application_name": "txinbox-test"}); err != nil {
		t.Fatalf("application_name refused: %v", err)
	}
	_, err := checkPooler(t, tx, map[string]string{"search_path": "public"})
	if err == nil {
		t.Fatal("search_path as a startup parameter passed behind a transaction pool")
	}
	if !strings.Contains(err.Error(), "search_path") {
		t.Errorf("the error %q does not name search_path", err)
	}
	t.Logf("search_path as a startup parameter: %v", err)
}
