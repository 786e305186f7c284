package mysqlstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// TestDurability: the driver is a store.DurabilityReader (what serve
// checks at start and status shows); each setting that can lose acked
// messages is a risk by name, and what could not be read is said.
func TestDurability(t *testing.T) {
	var dr store.DurabilityReader = newDriver(t)
	d, err := dr.Durability(context.Background())
	if err != nil || len(d.Settings) == 0 || d.Crash == "" || d.Failover == "" {
		t.Fatalf("Durability = %+v, %v", d, err)
	}
	t.Logf("%s; crash: %s; failover: %s", d.Summary(), d.Crash, d.Failover)
	safe := mysqlstore.Settings{FlushLogAtTrxCommit: 1, LogBin: true, SyncBinlog: 1, Doublewrite: "ON"}
	for _, tc := range []struct {
		name   string
		change func(*mysqlstore.Settings)
		risk   string // "" for none
	}{
		{"safe", func(*mysqlstore.Settings) {}, ""},
		{"flush 2", func(s *mysqlstore.Settings) { s.FlushLogAtTrxCommit = 2 }, "innodb_flush_log_at_trx_commit=2"},
		{"flush 0", func(s *mysqlstore.Settings) { s.FlushLogAtTrxCommit = 0 }, "innodb_flush_log_at_trx_commit=0"},
		{"sync_binlog 0", func(s *mysqlstore.Settings) { s.SyncBinlog = 0 }, "sync_binlog=0"},
		{"no binary log", func(s *mysqlstore.Settings) { s.LogBin, s.SyncBinlog = false, 0 }, ""},
		{"doublewrite off", func(s *mysqlstore.Settings) { s.Doublewrite = "OFF" }, "innodb_doublewrite=OFF"},
		{"doublewrite detect only", func(s *mysqlstore.Settings) { s.Doublewrite = "DETECT_ONLY" }, "innodb_doublewrite=DETECT_ONLY"},
		{"async replica", func(s *mysqlstore.Settings) { s.Replicas = 2 }, "asynchronous replication to 2 replica(s)"},
		{"semi-sync replica", func(s *mysqlstore.Settings) { s.Replicas, s.SemiSync = 1, "ON" }, ""},
	} {
		s := safe
		tc.change(&s)
		j := s.Judge()
		var got []string
		for _, r := range j.Risks {
			got = append(got, r.Setting)
			if r.Name == "" || r.Value == "" || r.Loses == "" || r.Fix == "" {
				t.Errorf("%s: risk %+v lacks a field", tc.name, r)
			}
		}
		if g := strings.Join(got, ", "); g != tc.risk {
			t.Errorf("%s: risks %q, want %q", tc.name, g, tc.risk)
		}
		// The crash sentence agrees with the risks: "loses no acked
		// message" only when no risk of a crash is listed.
		if safeCrash := strings.Contains(j.Crash, "loses no acked message"); safeCrash != !strings.Contains(tc.risk, "innodb_") {
			t.Errorf("%s: crash sentence %q beside risks %q", tc.name, j.Crash, tc.risk)
		}
	}
	s := safe
	s.Replicas = -1
	if j := s.Judge(); len(j.Unread) != 1 || !strings.Contains(j.Unread[0], "PROCESS") || !strings.Contains(j.Failover, "not known") {
		t.Errorf("replicas unread: %+v", j)
	}
}
