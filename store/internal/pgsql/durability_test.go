package pgsql

import (
	"strings"
	"testing"
)

// TestJudgeReplication: how the standbys replicate decides what a failover
// loses. pg_stat_replication cannot be filled without standbys, so the
// rows are given here; the reading itself is tested on real servers
// (durability_test.go).
func TestJudgeReplication(t *testing.T) {
	base := DurabilitySettings{Fsync: "on", FullPageWrites: "on", SyncCommit: "on", WalWriterDelay: "200ms", Role: "txinbox", CanSeeStandbys: true}
	for _, c := range []struct {
		name      string
		change    func(*DurabilitySettings)
		risks     []string // risk names
		failover  string   // in the failover sentence
		riskWords string   // in the first risk's text
	}{
		{"no standby", func(*DurabilitySettings) {}, nil, "no standby replicates", ""},
		{"synchronous", func(p *DurabilitySettings) {
			p.StandbyNames, p.Standbys = "FIRST 1 (s1)", []Standby{{"s1", "10.0.0.2", "sync"}}
		}, nil, "loses no acked message", ""},
		{"asynchronous", func(p *DurabilitySettings) {
			p.Standbys = []Standby{{"s1", "10.0.0.2", "async"}}
		}, []string{"asynchronous_standby"}, "loses the commits it had not received", "FIRST 1 (s1)"},
		{"synchronous, commit local", func(p *DurabilitySettings) {
			p.SyncCommit, p.StandbyNames, p.Standbys = "local", "s1", []Standby{{"s1", "10.0.0.2", "sync"}}
		}, []string{"synchronous_commit"}, "does not wait", "do not wait for the synchronous standby"},
		{"synchronous, commit off", func(p *DurabilitySettings) {
			p.SyncCommit, p.StandbyNames, p.Standbys = "off", "s1", []Standby{{"s1", "10.0.0.2", "sync"}}
		}, []string{"synchronous_commit"}, "does not wait", "before its WAL is on disk"},
		{"synchronous and asynchronous", func(p *DurabilitySettings) {
			p.StandbyNames, p.Standbys = "s1", []Standby{{"s1", "10.0.0.2", "sync"}, {"s2", "10.0.0.3", "async"}}
		}, nil, "one to an asynchronous standby (s2) can lose", ""},
		{"hidden from the role", func(p *DurabilitySettings) {
			p.CanSeeStandbys, p.Standbys = false, []Standby{{"", "local", ""}}
		}, nil, "hidden from role txinbox", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := base
			c.change(&p)
			d := p.Judge()
			var names []string
			for _, r := range d.Risks {
				names = append(names, r.Name)
			}
			if strings.Join(names, ",") != strings.Join(c.risks, ",") {
				t.Errorf("risks %v, want %v", names, c.risks)
			}
			if !strings.Contains(d.Failover, c.failover) {
				t.Errorf("failover %q does not say %q", d.Failover, c.failover)
			}
			for _, r := range d.Risks {
				if r.Value == "" || r.Value == "on" {
					t.Errorf("risk %s has the value %q (the metric's label)", r.Setting, r.Value)
				}
			}
			if c.riskWords != "" && (len(d.Risks) == 0 || !strings.Contains(d.Risks[0].String(), c.riskWords)) {
				t.Errorf("risks %v do not say %q", d.Risks, c.riskWords)
			}
			if !p.CanSeeStandbys && (len(d.Unread) != 1 || !strings.Contains(d.Unread[0], "GRANT pg_monitor TO txinbox")) {
				t.Errorf("unread %v, want the grant that shows the standbys", d.Unread)
			}
		})
	}
}
