package cli_test

import (
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// TestMigrateAndAdminOnMySQL: the admin commands on MySQL (MariaDB),
// through a mysql:// URL and go-sql-driver's DSN form alike; --schema is
// refused there, naming what to use.
func TestMigrateAndAdminOnMySQL(t *testing.T) {
	url := mysqltest.NewDatabase(t)
	cfg, err := mysqlstore.ParseDSN(url)
	if err != nil {
		t.Fatal(err)
	}
	dsn := cfg.User + "@tcp(" + cfg.Addr + ")/" + cfg.DBName
	if cfg.Passwd != "" {
		dsn = cfg.User + ":" + cfg.Passwd + "@tcp(" + cfg.Addr + ")/" + cfg.DBName
	}
	for _, db := range []string{url, dsn} {
		if out, errs, code := run(t, "migrate", "--db", db); code != 0 || !strings.Contains(out, "(mysql)") {
			t.Fatalf("migrate --db %s: exit %d: %s%s", db, code, out, errs)
		}
		out, errs, code := run(t, "status", "--db", db)
		if code != 0 || !strings.Contains(out, "no setting loses acknowledged messages") || !strings.Contains(out, "a crash") ||
			!strings.Contains(out, "a failover") || !strings.Contains(out, "inbox rows") {
			t.Errorf("status --db %s: exit %d: %s%s", db, code, out, errs)
		}
		// status reads MySQL's settings as the server does (store.DurabilityReader)
		out, errs, code = run(t, "status", "--json", "--db", db)
		if code != 0 || !strings.Contains(out, `"innodb_flush_log_at_trx_commit":"1"`) || !strings.Contains(out, `"risks":[]`) {
			t.Errorf("status --json --db %s: exit %d: %s%s", db, code, out, errs)
		}
		for _, args := range [][]string{{"dlq", "list"}, {"drift", "list"}, {"purge", "--dry-run"}} {
			if out, errs, code := run(t, append(args, "--db", db)...); code != 0 {
				t.Errorf("%v --db %s: exit %d: %s%s", args, db, code, out, errs)
			}
		}
	}
	if _, errs, code := run(t, "migrate", "--db", url, "--schema", "s"); code == 0 || !strings.Contains(errs, "--table-prefix") {
		t.Errorf("--schema on MySQL: exit %d, %q", code, errs)
	}
}
