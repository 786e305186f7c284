package serve_test

import (
	"fmt"
	"testing"

	"github.com/txinbox/txinbox/store/sqlitestore"
)

// checkReplayAudited: the audit table of the SQLite inbox at path holds
// exactly one replay-outbox row, with who, why, the row's key and id.
func checkReplayAudited(t *testing.T, path, actor, reason, scope, messageID, id string) {
	t.Helper()
	d, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rows, err := d.DB().Query(`SELECT at, actor, scope, message_id, reason, detail FROM txinbox_audit WHERE action = 'replay-outbox'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var at, a, s, m, r, detail string
		if err := rows.Scan(&at, &a, &s, &m, &r, &detail); err != nil {
			t.Fatal(err)
		}
		if at == "" {
			t.Error("audit row without a time")
		}
		got = append(got, fmt.Sprint(a, "|", s, "|", m, "|", r, "|", detail))
	}
	want := fmt.Sprint(actor, "|", scope, "|", messageID, "|", reason, "|", `{"outbox_id":`+id+`,"part":0}`)
	if len(got) != 1 || got[0] != want {
		t.Errorf("audited outbox replays %q, want [%q]", got, want)
	}
}
