package clikit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/internal/testdb"
)

// TestPingRefusesAStandby: the ping behind serve's /readyz says a hot
// standby (it answers every query and fails every batch) is not the
// database to process on, on pgstore and on database/sql, and passes on
// the primary.
func TestPingRefusesAStandby(t *testing.T) {
	pair := testdb.StartReplicaPair(t, false)
	ctx := context.Background()
	for _, suffix := range []string{"", "&txinbox_store=database/sql"} {
		primary, err := clikit.OpenDB(ctx, clikit.DBFlags{URL: pair.Primary.URL() + suffix}, 4)
		if err != nil {
			t.Fatal(err)
		}
		if err := primary.Admin.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if err := primary.Ping(ctx); err != nil {
			t.Errorf("primary%s: Ping = %v, want nil", suffix, err)
		}
		primary.Close()
		// The standby replays the migration a moment later.
		var standby *clikit.InboxDB
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if standby, err = clikit.OpenMigrated(ctx, clikit.DBFlags{URL: pair.Standby.URL() + suffix}, 4); err == nil {
				break
			} else if time.Now().After(deadline) {
				t.Fatal(err)
			}
		}
		err = standby.Ping(ctx)
		standby.Close()
		if err == nil || !strings.Contains(err.Error(), "standby in recovery") {
			t.Errorf("standby%s: Ping = %v, want the standby named", suffix, err)
		}
	}
}

// TestPingMySQL: the ping passes on a MariaDB primary (read_only off). The
// read_only case is not set up here: it is global to the shared server.
func TestPingMySQL(t *testing.T) {
	ctx := context.Background()
	db, err := clikit.OpenDB(ctx, clikit.DBFlags{URL: mysqltest.NewDatabase(t)}, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping = %v", err)
	}
}
