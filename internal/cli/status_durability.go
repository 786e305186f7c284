package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/store"
)

// readDurability reads the database's durability settings (serve's
// start-up check), or says why it could not.
func readDurability(ctx context.Context, db *clikit.InboxDB) (store.Durability, error) {
	dr, ok := db.Admin.(store.DurabilityReader)
	if !ok {
		return store.Durability{}, fmt.Errorf("the %s store reads no durability settings", db.Kind)
	}
	return dr.Durability(ctx)
}

// printDurability writes the durability lines of txinbox status: the
// summary, each risk with its fix, what a crash and a failover can lose.
func printDurability(w io.Writer, d store.Durability, err error) {
	if err != nil {
		fmt.Fprintf(w, "durability\tnot read: %v\n", err)
		return
	}
	fmt.Fprintf(w, "durability\t%s\n", d.Summary())
	for _, r := range d.Risks {
		fmt.Fprintf(w, "  RISK %s\t%s; %s\n", r.Setting, r.Loses, r.Fix)
	}
	fmt.Fprintf(w, "  a crash\t%s\n", d.Crash)
	fmt.Fprintf(w, "  a failover\t%s\n", d.Failover)
}

// durabilityJSON is the "durability" object of status --json.
func durabilityJSON(d store.Durability, err error) map[string]any {
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	settings := map[string]string{}
	for _, s := range d.Settings {
		settings[s.Name] = s.Value
	}
	risks := []map[string]string{}
	for _, r := range d.Risks {
		risks = append(risks, map[string]string{"name": r.Name, "setting": r.Setting, "loses": r.Loses, "fix": r.Fix})
	}
	return map[string]any{"settings": settings, "risks": risks, "unread": d.Unread, "crash": d.Crash, "failover": d.Failover}
}
