package server_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksOnlyWhatItsConfigurationUses keeps package server light: a
// program that runs a broker source over SQLite links neither the AS4
// stack, nor the EDI parsers, nor the PostgreSQL store, nor pgx. The
// console reaches AS4 and EDI through console/as4view and console/ediview,
// which only a program that wants them imports (txinbox serve does); the
// outbox reaches PostgreSQL through outbox/outboxpg, and package effect
// (serve's --effect for Go programs) through store.StatementRunner.
func TestLinksOnlyWhatItsConfigurationUses(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the imports with:", err)
	}
	const mod = "github.com/txinbox/txinbox/"
	heavy := []string{mod + "as4", mod + "edi", mod + "store/pgstore", mod + "console/as4view", mod + "console/ediview",
		mod + "outbox/outboxpg", "github.com/jackc/pgx"}
	for _, pkg := range []string{mod + "server", mod + "console", mod + "outbox", mod + "effect"} {
		out, err := exec.Command(goTool, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, h := range heavy {
			if dep, ok := linked(strings.Fields(string(out)), h); ok {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}

// linked returns the first of deps that is the package prefix or one
// under it.
func linked(deps []string, prefix string) (string, bool) {
	for _, dep := range deps {
		if dep == prefix || strings.HasPrefix(dep, prefix+"/") {
			return dep, true
		}
	}
	return "", false
}
