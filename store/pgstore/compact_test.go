package pgstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/store"
)

const columnsDDL = `CREATE TABLE effects (scope text NOT NULL, message_id text NOT NULL, source text, source_position text,
	partition_key text, received_at timestamptz, payload bytea, headers jsonb)`

// The effect statements of TestClaimColumnsRoundTrip: one that reads no
// payload (the claim without the join) and one that does.
const (
	keysEffect    = `INSERT INTO effects (scope, message_id, source, source_position, partition_key, received_at) SELECT scope, message_id, source, source_position, partition_key, received_at FROM new_messages`
	payloadEffect = `INSERT INTO effects SELECT scope, message_id, source, source_position, partition_key, received_at, payload, headers FROM new_messages`
)

// columnBatches are batches whose columns are the same throughout, or not,
// in every place: a claim sends a column with one value as that value
// alone, so an off-by-one there shows as a wrong row.
func columnBatches(prefix string) map[string][]store.EffectRow {
	at := time.Date(2026, 12, 2, 8, 0, 0, 123456000, time.UTC)
	row := func(scope, id, source, pos, pkey string, received time.Time) store.EffectRow {
		id = prefix + id
		payload := []byte("payload of " + scope + "/" + id)
		h := sha256.Sum256(payload)
		headers := ""
		if len(id)%2 == 0 {
			headers = `[{"key": "id", "value": "` + id + `"}]`
		}
		return store.EffectRow{ClaimRow: store.ClaimRow{Key: store.Key{Scope: scope, MessageID: id}, Source: source,
			SourcePosition: pos, PartitionKey: pkey, PayloadHash: h[:], ReceivedAt: received}, Payload: payload, Headers: headers}
	}
	uniform := func(id string) store.EffectRow { return row("s", id, "src", "", "", at) }
	batches := map[string][]store.EffectRow{
		"one row": {uniform("a")},
		"uniform": {uniform("a"), uniform("b"), uniform("c")},
		"last differs": {uniform("a"), uniform("b"), uniform("c"),
			row("t", "d", "other", "9", "k", at.Add(time.Microsecond))},
		"first differs": {row("t", "a", "other", "9", "k", at.Add(-time.Hour)), uniform("b"), uniform("c")},
		"same id in two scopes": {row("s", "a", "src", "1", "", at), row("t", "a", "src2", "2", "", at),
			row("s", "b", "src", "3", "", at)},
		"empty among values": {row("s", "a", "", "", "k1", at), row("s", "b", "src", "", "", at),
			row("s", "c", "src", "", "k1", at)},
		"multibyte": {row("s", "ä€😀", "sourcé", "pos ☃", "клю́ч", at), row("s", "b", "sourcé", "pos ☃", "клю́ч", at)},
	}
	// Each batch's keys its own.
	for name, rows := range batches {
		for i := range rows {
			rows[i].MessageID = name + "/" + rows[i].MessageID
		}
	}
	return batches
}

// TestClaimColumnsRoundTrip: every form of the claim (plain, classifying,
// with an effect in a transaction or committed on its own, reading the
// payload or not) stores each row's own columns in the inbox and hands
// them to the effect, whether a column is the same throughout the batch
// or not, and answers new keys as new and a known one as a duplicate.
func TestClaimColumnsRoundTrip(t *testing.T) {
	d, ctx := driverWithEffects(t, columnsDDL)
	pool := d.Pool()
	known := columnBatches("known-")["one row"]
	if _, err := d.CommitEffect(ctx, known, nil, nil, time.Time{}); err != nil {
		t.Fatal(err)
	}
	inTx := func(f func(tx store.Tx[pgx.Tx]) ([]store.ClaimResult, error)) ([]store.ClaimResult, error) {
		tx, err := d.Begin(ctx)
		if err != nil {
			return nil, err
		}
		defer tx.Rollback(ctx) //nolint:errcheck // no-op after Commit
		res, err := f(tx)
		if err == nil {
			err = tx.Commit(ctx)
		}
		return res, err
	}
	paths := []struct {
		name      string
		statement string
		claim     func(rows []store.EffectRow) ([]store.ClaimResult, error)
	}{
		{"claim", "", func(rows []store.EffectRow) ([]store.ClaimResult, error) {
			return inTx(func(tx store.Tx[pgx.Tx]) ([]store.ClaimResult, error) { return tx.Claim(ctx, claimRows(rows)) })
		}},
		{"claim with effect", keysEffect, func(rows []store.EffectRow) ([]store.ClaimResult, error) {
			return inTx(func(tx store.Tx[pgx.Tx]) ([]store.ClaimResult, error) {
				return tx.(store.EffectClaimer).ClaimWithEffect(ctx, rows, []string{keysEffect})
			})
		}},
		{"claim with payload effect", payloadEffect, func(rows []store.EffectRow) ([]store.ClaimResult, error) {
			return inTx(func(tx store.Tx[pgx.Tx]) ([]store.ClaimResult, error) {
				return tx.(store.EffectClaimer).ClaimWithEffect(ctx, rows, []string{payloadEffect})
			})
		}},
		{"commit effect", keysEffect, func(rows []store.EffectRow) ([]store.ClaimResult, error) {
			return d.CommitEffect(ctx, rows, []string{keysEffect}, &store.Checkpoint{Scope: "s", Source: "src", Partition: 0, Position: 1}, time.Now())
		}},
		{"commit payload effect", payloadEffect, func(rows []store.EffectRow) ([]store.ClaimResult, error) {
			return d.CommitEffect(ctx, rows, []string{payloadEffect}, nil, time.Time{})
		}},
	}
	for _, path := range paths {
		// Classifying: the claim before met a duplicate, so this one
		// answers for the keys it does not insert in the same statement.
		for _, classify := range []bool{false, true} {
			for name, rows := range columnBatches(fmt.Sprintf("%s/%v/", path.name, classify)) {
				t.Run(fmt.Sprintf("%s/classify=%v/%s", path.name, classify, name), func(t *testing.T) {
					if classify {
						if _, err := d.CommitEffect(ctx, known, nil, nil, time.Time{}); err != nil {
							t.Fatal(err)
						}
						rows = append(slices.Clone(rows), known[0])
					}
					res, err := path.claim(rows)
					if err != nil {
						t.Fatal(err)
					}
					for i, r := range res {
						want := store.ClaimNew
						if rows[i].Key == known[0].Key {
							want = store.ClaimExisting
						}
						if r.Status != want {
							t.Errorf("row %d (%s/%s): status %v, want %v", i, rows[i].Scope, rows[i].MessageID, r.Status, want)
						}
					}
					if classify {
						rows = rows[:len(rows)-1]
					}
					wantRows(t, pool, "inbox", rows, false)
					if path.statement != "" {
						wantRows(t, pool, "effects", rows, path.statement == payloadEffect)
					}
				})
			}
		}
	}
}

func claimRows(rows []store.EffectRow) []store.ClaimRow {
	out := make([]store.ClaimRow, len(rows))
	for i, r := range rows {
		out[i] = r.ClaimRow
	}
	return out
}

// wantRows checks that table ("inbox" or "effects") holds exactly rows'
// columns for their keys; with payload, the effect's payload and headers
// too.
func wantRows(t *testing.T, pool interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, table string, rows []store.EffectRow, payload bool) {
	t.Helper()
	q := `SELECT source, source_position, partition_key, received_at, payload_hash, NULL::bytea, NULL::text FROM txinbox_inbox
		WHERE scope = $1 AND message_id = $2`
	if table == "effects" {
		q = `SELECT source, source_position, partition_key, received_at, NULL::bytea, payload, headers::text FROM effects
			WHERE scope = $1 AND message_id = $2`
	}
	for _, r := range rows {
		rs, err := pool.Query(context.Background(), q, r.Scope, r.MessageID)
		if err != nil {
			t.Fatal(err)
		}
		type stored struct {
			Source, Position, PartitionKey string
			ReceivedAt                     time.Time
			Hash, Payload                  []byte
			Headers                        *string
		}
		got, err := pgx.CollectRows(rs, pgx.RowToStructByPos[stored])
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Errorf("%s: %d rows for %s/%s, want 1", table, len(got), r.Scope, r.MessageID)
			continue
		}
		g := got[0]
		if g.Source != r.Source || g.Position != r.SourcePosition || g.PartitionKey != r.PartitionKey || !g.ReceivedAt.Equal(r.ReceivedAt) {
			t.Errorf("%s: %s/%s stored (%q, %q, %q, %v), want (%q, %q, %q, %v)", table, r.Scope, r.MessageID,
				g.Source, g.Position, g.PartitionKey, g.ReceivedAt, r.Source, r.SourcePosition, r.PartitionKey, r.ReceivedAt)
		}
		if table == "inbox" && !bytes.Equal(g.Hash, r.PayloadHash) {
			t.Errorf("inbox: %s/%s payload hash %x, want %x", r.Scope, r.MessageID, g.Hash, r.PayloadHash)
		}
		if !payload {
			continue
		}
		headers := "" // NULL
		if g.Headers != nil {
			headers = *g.Headers
		}
		if !bytes.Equal(g.Payload, r.Payload) || headers != r.Headers {
			t.Errorf("effects: %s/%s payload %q headers %q, want %q %q", r.Scope, r.MessageID, g.Payload, headers, r.Payload, r.Headers)
		}
	}
}

// TestEffectReadsPayload: the claim joins the batch's payloads and headers
// in only when the effect reads them, by name, in a condition, by a
// whole-row reference or otherwise; a whole-row reference sees the
// payload, and a statement PostgreSQL cannot plan is taken as reading
// them (its error comes from the claim).
func TestEffectReadsPayload(t *testing.T) {
	d, ctx := driverWithEffects(t, columnsDDL+`; CREATE TABLE rows (doc jsonb); CREATE TABLE counts (n bigint)`)
	cases := []struct {
		statements []string
		reads      bool
	}{
		{[]string{keysEffect}, false},
		{[]string{`INSERT INTO counts SELECT count(*) FROM new_messages`}, false},
		{[]string{`INSERT INTO effects (scope, message_id) SELECT scope, message_id FROM new_messages WHERE received_at < now() + interval '1 day'`}, false},
		{[]string{payloadEffect}, true},
		{[]string{`INSERT INTO effects (scope, message_id) SELECT scope, message_id FROM new_messages WHERE length(payload) > 0`}, true},
		{[]string{`INSERT INTO effects (scope, message_id) SELECT scope, headers->0->>'value' FROM new_messages`}, true},
		{[]string{`INSERT INTO rows SELECT to_jsonb(n) FROM new_messages n`}, true},
		{[]string{`INSERT INTO rows SELECT to_jsonb(new_messages) FROM new_messages`}, true},
		{[]string{keysEffect, `INSERT INTO rows SELECT jsonb_build_object('p', encode(payload, 'escape')) FROM new_messages`}, true},
		{[]string{`INSERT INTO no_such_table SELECT scope FROM new_messages`}, true},
	}
	for _, c := range cases {
		if got := d.ReadsPayload(ctx, c.statements); got != c.reads {
			t.Errorf("ReadsPayload(%q) = %v, want %v", c.statements, got, c.reads)
		}
	}
	// A whole-row reference stores the payload and headers.
	rows := columnBatches("whole-")["uniform"]
	if _, err := d.CommitEffect(ctx, rows, []string{`INSERT INTO rows SELECT to_jsonb(n) FROM new_messages n`}, nil, time.Time{}); err != nil {
		t.Fatal(err)
	}
	docs, err := pgx.CollectRows(must(d.Pool().Query(ctx, `SELECT doc->>'payload' FROM rows ORDER BY doc->>'message_id'`)), pgx.RowTo[*string])
	if err != nil || len(docs) != len(rows) {
		t.Fatalf("rows: %v, %v", docs, err)
	}
	for i, p := range docs {
		if want := `\x` + fmt.Sprintf("%x", rows[i].Payload); p == nil || *p != want {
			t.Errorf("row %d: payload %v, want %s", i, p, want)
		}
	}
	// A trailing semicolon, or a trailing -- comment, is the statement's own.
	for i, stmt := range []string{"INSERT INTO counts SELECT count(*) FROM new_messages;\n", "INSERT INTO counts SELECT count(*) FROM new_messages -- the count"} {
		if _, err := d.CommitEffect(ctx, columnBatches(fmt.Sprint("tail-", i, "-"))["uniform"], []string{stmt}, nil, time.Time{}); err != nil {
			t.Errorf("%q: %v", stmt, err)
		}
	}
	// The statement PostgreSQL cannot plan fails with its own error.
	_, err = d.CommitEffect(ctx, columnBatches("bad-")["uniform"], []string{`INSERT INTO no_such_table SELECT scope FROM new_messages`}, nil, time.Time{})
	if err == nil || !strings.Contains(err.Error(), "no_such_table") {
		t.Errorf("effect on an unknown table: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestPartitionedClaimColumnsRoundTrip is TestClaimColumnsRoundTrip's
// claim on the partitioned layout (its own statement), before and after a
// period switch.
func TestPartitionedClaimColumnsRoundTrip(t *testing.T) {
	d, _ := partitionedInbox(t, 4)
	ctx := context.Background()
	known := claimRows(columnBatches("known-")["one row"])
	claim := func(rows []store.ClaimRow) ([]store.ClaimResult, error) {
		tx, err := d.Begin(ctx)
		if err != nil {
			return nil, err
		}
		defer tx.Rollback(ctx) //nolint:errcheck // no-op after Commit
		res, err := tx.Claim(ctx, rows)
		if err == nil {
			err = tx.Commit(ctx)
		}
		return res, err
	}
	if _, err := claim(known); err != nil {
		t.Fatal(err)
	}
	for _, rotate := range []bool{false, true} {
		if rotate {
			if _, _, err := d.RotatePeriod(ctx, true); err != nil {
				t.Fatal(err)
			}
		}
		for name, rows := range columnBatches(fmt.Sprintf("partitioned/%v/", rotate)) {
			t.Run(fmt.Sprintf("rotated=%v/%s", rotate, name), func(t *testing.T) {
				res, err := claim(append(claimRows(rows), known[0]))
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range res {
					want := store.ClaimNew
					if i == len(rows) {
						want = store.ClaimExisting
					}
					if r.Status != want {
						t.Errorf("row %d: status %v, want %v", i, r.Status, want)
					}
				}
				wantRows(t, d.Pool(), "inbox", rows, false)
			})
		}
	}
}
