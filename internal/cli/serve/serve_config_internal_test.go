package serve

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// TestConfigLists: a YAML list joins with commas for a list flag, and sets
// a repeatable flag once per item; the environment replaces the file's
// items.
func TestConfigLists(t *testing.T) {
	setup := func() (*flag.FlagSet, *string, *statements) {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		topics := fs.String("kafka-topics", "", "")
		var stmts statements
		fs.Var(&stmts, "effect-sql", "")
		return fs, topics, &stmts
	}
	path := filepath.Join(t.TempDir(), "txinbox.yaml")
	yml := "kafka-topics: [invoices, orders]\neffect-sql:\n  - INSERT INTO a VALUES ($1)\n  - INSERT INTO b VALUES ($2)\n"
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	fs, topics, stmts := setup()
	if err := clikit.ApplyConfig(fs, &clikit.Env{Getenv: func(string) string { return "" }}, path); err != nil {
		t.Fatal(err)
	}
	if *topics != "invoices,orders" || !slices.Equal(*stmts, statements{"INSERT INTO a VALUES ($1)", "INSERT INTO b VALUES ($2)"}) {
		t.Errorf("topics %q, statements %q", *topics, *stmts)
	}
	fs, _, stmts = setup()
	env := &clikit.Env{Getenv: func(k string) string {
		return map[string]string{"TXINBOX_EFFECT_SQL": "INSERT INTO c VALUES ($1)"}[k]
	}}
	if err := clikit.ApplyConfig(fs, env, path); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(*stmts, statements{"INSERT INTO c VALUES ($1)"}) {
		t.Errorf("environment over the file: statements %q", *stmts)
	}
}
