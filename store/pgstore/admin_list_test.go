package pgstore_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/store"
)

// TestDeadLetterPagesAtAMillion lists pages of 1,000,000 dead letters by
// key and checks the plan PostgreSQL runs for them: a backward walk of the
// primary key that stops after one page, with no sort and a few buffers,
// at the first page and at the deepest one. (OFFSET would read every row
// above the page.) It asserts the plan and the buffers touched, not times.
func TestDeadLetterPagesAtAMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("inserts 1,000,000 rows")
	}
	d, ctx := guardedDriver(t)
	const n = 1_000_000
	if _, err := d.Pool().Exec(ctx, d.Tables().Expand(`INSERT INTO {dead_letters}
		(scope, message_id, source, payload, payload_hash, attempts, reason, last_error, received_at, dead_lettered_at)
		SELECT 'invoices', 'm-' || g, 'queue-' || (g % 4), convert_to('payload ' || g, 'UTF8'), '\x00', 5,
		       'too many attempts', 'partner refused', now() - g * interval '1 second', now() - g * interval '1 second'
		FROM generate_series(1, $1) g`), n); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool().Exec(ctx, d.Tables().Expand(`VACUUM ANALYZE {dead_letters}`)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    store.ListFilter
	}{
		{"first page", store.ListFilter{Limit: 50, OmitPayload: true}},
		{"deepest page", store.ListFilter{Limit: 50, OmitPayload: true, Before: 60}},
		{"scope, deep", store.ListFilter{Scope: "invoices", Limit: 50, OmitPayload: true, Before: 500_000}},
	} {
		query, args := d.ListDeadLettersSQL(tc.f)
		var raw []byte
		if err := d.Pool().QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+query, args...).Scan(&raw); err != nil {
			t.Fatalf("%s: EXPLAIN: %v", tc.name, err)
		}
		var plans []struct {
			Plan          planNode `json:"Plan"`
			ExecutionTime float64  `json:"Execution Time"`
		}
		if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
			t.Fatalf("%s: plan %s: %v", tc.name, raw, err)
		}
		p := plans[0].Plan
		scan := p.find("Index Scan")
		if scan == nil || scan.Direction != "Backward" || !strings.HasSuffix(scan.Index, "dead_letters_pkey") || p.find("Sort") != nil {
			t.Errorf("%s: the page is not a backward walk of the primary key:\n%s", tc.name, raw)
			continue
		}
		if scan.ActualRows > 50 || p.buffers() > 200 {
			t.Errorf("%s: the page read %v rows and %d buffers, want one page's worth:\n%s", tc.name, scan.ActualRows, p.buffers(), raw)
		}
		t.Logf("%s: %s on %s, %v rows, %d buffers, %.3f ms", tc.name, scan.NodeType, scan.Index, scan.ActualRows, p.buffers(), plans[0].ExecutionTime)
	}
}

// planNode is the part of an EXPLAIN (FORMAT JSON) node the test reads.
type planNode struct {
	NodeType   string     `json:"Node Type"`
	Index      string     `json:"Index Name"`
	Direction  string     `json:"Scan Direction"`
	ActualRows float64    `json:"Actual Rows"`
	SharedHit  int64      `json:"Shared Hit Blocks"`
	SharedRead int64      `json:"Shared Read Blocks"`
	Plans      []planNode `json:"Plans"`
}

// find returns the first node whose type starts with prefix.
func (p *planNode) find(prefix string) *planNode {
	if strings.HasPrefix(p.NodeType, prefix) {
		return p
	}
	for i := range p.Plans {
		if f := p.Plans[i].find(prefix); f != nil {
			return f
		}
	}
	return nil
}

// buffers are the top node's shared buffers, its children's included.
func (p *planNode) buffers() int64 { return p.SharedHit + p.SharedRead }
