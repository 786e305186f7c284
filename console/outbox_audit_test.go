package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/console"
)

// TestOutboxReplayAudited: replaying a failed outbox row in the console
// records who did it and why in the audit table, as a dead letter's
// replay does.
func TestOutboxReplayAudited(t *testing.T) {
	e := newEnv(t, console.Auth{Users: map[string]string{"ops": "s3cret"}})
	var id int64
	if err := e.pool.QueryRow(e.ctx, `INSERT INTO `+e.schema+`.txinbox_outbox (scope, message_id, part, source, payload, failed_at, last_error)
		VALUES ('s', 'm-1', 0, 'kafka', 'x', now(), '422') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	_, page := e.get("/ui/outbox", basic("ops", "s3cret"))
	code, body := e.post(fmt.Sprintf("/ui/outbox/%d/replay", id), url.Values{"reason": {"endpoint fixed"}, "csrf": {e.csrfOf(page)}},
		basic("ops", "s3cret"))
	if code != http.StatusOK || !strings.Contains(body, "queued again") {
		t.Fatalf("POST outbox replay = %d: %s", code, body)
	}
	var actor, reason, detail string
	if err := e.pool.QueryRow(e.ctx, `SELECT actor, reason, detail FROM `+e.schema+`.txinbox_audit
		WHERE action = 'replay-outbox' AND scope = 's' AND message_id = 'm-1'`).Scan(&actor, &reason, &detail); err != nil {
		t.Fatalf("no audit row of the outbox replay: %v", err)
	}
	if actor != "console:ops" || reason != "endpoint fixed" || detail != fmt.Sprintf(`{"outbox_id":%d,"part":0}`, id) {
		t.Errorf("audit row %q %q %q", actor, reason, detail)
	}
}
