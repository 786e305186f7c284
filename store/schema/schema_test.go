package schema

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestValidateIdent(t *testing.T) {
	for _, ok := range []string{"txinbox_", "a", "_x9", strings.Repeat("a", MaxIdentLen)} {
		if err := ValidateIdent("prefix", ok, false); err != nil {
			t.Errorf("ValidateIdent(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "9a", "A", "a-b", `a"; DROP TABLE x; --`, "a b", "é", strings.Repeat("a", MaxIdentLen+1)} {
		err := ValidateIdent("Options.TablePrefix", bad, false)
		if err == nil || !strings.Contains(err.Error(), "Options.TablePrefix") {
			t.Errorf("ValidateIdent(%q) = %v, want an error naming the field", bad, err)
		}
	}
	if err := ValidateIdent("schema", "", true); err != nil {
		t.Errorf("empty allowed: %v", err)
	}
}

func TestExpandAndLoad(t *testing.T) {
	tb := NewTables("billing", "ti_")
	if got := tb.Expand("SELECT * FROM {inbox} JOIN {drift}; CREATE INDEX {prefix}x"); got != `SELECT * FROM "billing"."ti_inbox" JOIN "billing"."ti_drift"; CREATE INDEX ti_x` {
		t.Errorf("Expand = %s", got)
	}
	if NewTables("", "p_").Inbox != `"p_inbox"` {
		t.Error("unqualified name")
	}
	ms, err := Load(fstest.MapFS{
		"002_b.sql": {Data: []byte("B {inbox}")},
		"001_a.sql": {Data: []byte("A")},
	}, tb)
	if err != nil || len(ms) != 2 || ms[0].Version != 1 || ms[1].Name != "b" || ms[1].SQL != `B "billing"."ti_inbox"` {
		t.Errorf("Load = %+v, %v", ms, err)
	}
	if _, err := Load(fstest.MapFS{"x.sql": {Data: []byte("")}}, tb); err == nil {
		t.Error("Load accepted a file without a version")
	}
}
