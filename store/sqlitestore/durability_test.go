package sqlitestore_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/store/sqlitestore"
)

// TestDurability: FULL (the default) loses nothing acked; NORMAL in WAL
// mode is a risk naming what a machine crash loses and the option that
// fixes it.
func TestDurability(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ sync, risk string }{{"", ""}, {"NORMAL", "synchronous=NORMAL"}} {
		d, err := sqlitestore.Open(filepath.Join(t.TempDir(), "d.db"), sqlitestore.Options{Synchronous: c.sync})
		if err != nil {
			t.Fatal(err)
		}
		du, err := d.Durability(context.Background())
		d.Close()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.risk == "" && len(du.Risks) != 0:
			t.Errorf("synchronous %q: risks %v", c.sync, du.Risks)
		case c.risk != "" && (len(du.Risks) != 1 || du.Risks[0].Setting != c.risk):
			t.Errorf("synchronous %q: risks %v, want %s", c.sync, du.Risks, c.risk)
		case c.risk != "" && (!strings.Contains(du.Risks[0].Loses, "power loss loses the last commits") ||
			!strings.Contains(du.Risks[0].Fix, `Synchronous: "FULL"`)):
			t.Errorf("synchronous %q: %v", c.sync, du.Risks[0])
		}
		if !strings.Contains(du.Failover, "no standby") {
			t.Errorf("failover %q", du.Failover)
		}
	}
}
