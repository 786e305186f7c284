package pgsql

import (
	"strings"
	"testing"

	"github.com/txinbox/txinbox/store/schema"
)

// Every form of an effect's claim, and the probe, is expanded for the
// store's tables: none keeps a {table} placeholder, each names the
// schema's inbox, and each form has an index of its own.
func TestEffectClaimsExpanded(t *testing.T) {
	tables := schema.NewTables("s1", "p_")
	statements := []string{
		"INSERT INTO invoices (scope, message_id, body) SELECT scope, message_id, payload FROM new_messages;",
		"UPDATE counters SET n = n + 1 -- per batch",
	}
	indexes := map[int]bool{}
	bools := []bool{false, true}
	for _, classify := range bools {
		for _, committed := range bools {
			for _, checkpoint := range bools {
				for _, payload := range bools {
					for _, drift := range bools {
						f := EffectForm{Classify: classify, Committed: committed, Checkpoint: checkpoint, Payload: payload, Drift: drift}
						checkExpanded(t, f, EffectClaim(tables, statements, f))
						if i := f.Index(); i < 0 || i >= EffectForms || indexes[i] {
							t.Errorf("%+v: index %d out of range or taken", f, i)
						}
						indexes[f.Index()] = true
					}
				}
			}
		}
	}
	probe := EffectProbe(tables, statements)
	checkExpanded(t, EffectForm{Committed: true}, probe)
	if !strings.Contains(probe, ProbeSetting+"payload") || !strings.Contains(probe, ProbeSetting+"headers") {
		t.Errorf("the probe reads no %s setting:\n%s", ProbeSetting, probe)
	}
}

func checkExpanded(t *testing.T, f EffectForm, sql string) {
	t.Helper()
	if strings.ContainsAny(sql, "{}") {
		t.Errorf("%+v keeps a placeholder:\n%s", f, sql)
	}
	if !strings.Contains(sql, `"s1"."p_inbox"`) {
		t.Errorf("%+v names no inbox of schema s1 with prefix p_:\n%s", f, sql)
	}
	if f.Drift && !strings.Contains(sql, `"s1"."p_drift"`) {
		t.Errorf("%+v records no drift in s1:\n%s", f, sql)
	}
	if (f.Checkpoint || f.Drift) && !strings.Contains(sql, `"s1"."p_checkpoints"`) {
		t.Errorf("%+v saves no checkpoint in s1:\n%s", f, sql)
	}
}
