package cli

import (
	"testing"
	"time"
)

func TestPurgeScopesOnlyWhenRetentionsDiffer(t *testing.T) {
	day := 24 * time.Hour
	o := &serveOps{Retention: "30d", retention: 30 * day}
	def := o.defaultRetention()
	o.scopes = []scopeRetention{{"as4", def}, {"kafka", def}}
	if got := o.purgeScopes(); got != nil {
		t.Errorf("every scope at --retention: %v, want none (one all-scope purge)", got)
	}
	o.scopes[1].retention = retention{d: 60 * day, figure: "--kafka-retention 60d"}
	got := o.purgeScopes()
	if len(got) != 2 || got[0].Scope != "as4" || got[0].Retention != 30*day || got[1].Scope != "kafka" || got[1].Retention != 60*day {
		t.Errorf("kafka at 60d: %+v, want as4 30d and kafka 60d", got)
	}
}
