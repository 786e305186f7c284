package server_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksOnlyWhatItsConfigurationUses keeps package server light: a
// program that runs a broker source over SQLite links neither the AS4
// stack, nor the EDI parsers, nor the PostgreSQL store. The console
// reaches AS4 and EDI through console/as4view and console/ediview, which
// only a program that wants them imports (txinbox serve does).
func TestLinksOnlyWhatItsConfigurationUses(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the imports with:", err)
	}
	const mod = "github.com/txinbox/txinbox/"
	heavy := []string{mod + "as4", mod + "edi", mod + "store/pgstore", mod + "console/as4view", mod + "console/ediview"}
	for _, pkg := range []string{mod + "server", mod + "console", mod + "outbox"} {
		out, err := exec.Command(goTool, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, h := range heavy {
				if dep == h || strings.HasPrefix(dep, h+"/") {
					t.Errorf("%s links %s", pkg, dep)
				}
			}
		}
	}
}
