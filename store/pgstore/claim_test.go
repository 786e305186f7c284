package pgstore_test

// The claim at the store level: one statement answers for inserted,
// duplicate and dead-lettered keys alike, and a key whose first delivery
// commits while the claim waits on it falls back to the lookup statement
// (a newer snapshot) instead of failing the batch with ErrClaimRace.

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/pgstore"
)

// lookupCounter counts the lookup statements run through a pool.
type lookupCounter struct{ n atomic.Int64 }

func (c *lookupCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, "SELECT m.ord, i.payload_hash") {
		c.n.Add(1)
	}
	return ctx
}

func (c *lookupCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// claimEnv is a migrated schema and a way to open drivers on it.
type claimEnv struct {
	t      *testing.T
	ctx    context.Context
	admin  *pgxpool.Pool
	schema string
}

func newClaimEnv(t *testing.T) *claimEnv {
	t.Helper()
	admin := testdb.Require(t)
	e := &claimEnv{t: t, ctx: context.Background(), admin: admin, schema: testdb.NewSchema(t, admin)}
	if err := e.driver("", nil).Migrate(e.ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

// driver opens a driver on a pool of its own named app, traced by tracer
// (when not nil: a lookupCounter, roundTrips).
func (e *claimEnv) driver(app string, tracer pgx.QueryTracer) *pgstore.Driver {
	e.t.Helper()
	cfg, err := pgxpool.ParseConfig(testdb.URL())
	if err != nil {
		e.t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = e.schema
	if app != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = app
	}
	if tracer != nil {
		cfg.ConnConfig.Tracer = tracer
	}
	pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(pool.Close)
	d, err := pgstore.New(pool, pgstore.Options{Schema: e.schema})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func claimRow(id string, hash byte) store.ClaimRow {
	return store.ClaimRow{Key: store.Key{Scope: "claims", MessageID: id}, Source: "test", SourcePosition: id,
		PayloadHash: bytes.Repeat([]byte{hash}, 32), ReceivedAt: time.Now()}
}

// claimCommitted claims rows in a transaction of d and commits it.
func (e *claimEnv) claimCommitted(d *pgstore.Driver, rows ...store.ClaimRow) {
	e.t.Helper()
	tx, err := d.Begin(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer tx.Rollback(e.ctx) //nolint:errcheck // no-op after Commit
	if _, err := tx.Claim(e.ctx, rows); err != nil {
		e.t.Fatal(err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

// deadLetter commits a dead letter for id.
func (e *claimEnv) deadLetter(d *pgstore.Driver, id string) {
	e.t.Helper()
	tx, err := d.Begin(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer tx.Rollback(e.ctx) //nolint:errcheck // no-op after Commit
	err = tx.DeadLetter(e.ctx, []store.DeadLetterRow{{Key: store.Key{Scope: "claims", MessageID: id}, Source: "test",
		PayloadHash: make([]byte, 32), HeadersJSON: []byte("[]"), Attempts: 1, Reason: "test", ReceivedAt: time.Now(), DeadLetteredAt: time.Now()}})
	if err == nil {
		err = tx.Commit(e.ctx)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// inbox returns the committed inbox: message id → first byte of its hash.
func (e *claimEnv) inbox() map[string]byte {
	e.t.Helper()
	rows, _ := e.admin.Query(e.ctx, `SELECT message_id, payload_hash FROM "`+e.schema+`".txinbox_inbox`)
	out := map[string]byte{}
	var id string
	var h []byte
	if _, err := pgx.ForEachRow(rows, []any{&id, &h}, func() error { out[id] = h[0]; return nil }); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// wantClaims compares results with statuses and the first hash byte of
// the existing ones.
func wantClaims(t *testing.T, got []store.ClaimResult, want []store.ClaimStatus, hashes []byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d results, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Status != want[i] {
			t.Errorf("result %d: status %v, want %v", i, got[i].Status, want[i])
		}
		if want[i] == store.ClaimExisting && (len(got[i].StoredHash) != 32 || got[i].StoredHash[0] != hashes[i]) {
			t.Errorf("result %d: stored hash %x, want 32 bytes of %x", i, got[i].StoredHash, hashes[i])
		}
	}
}

// TestClaimAnswersDuplicatesInOneStatement: once a batch of the driver met
// a duplicate, new, duplicate and dead-lettered keys, in any order, are
// classified by the claim alone, with no lookup statement; after a batch
// without duplicates, the lookup answers again.
func TestClaimAnswersDuplicatesInOneStatement(t *testing.T) {
	t.Parallel()
	e := newClaimEnv(t)
	var lookups lookupCounter
	d := e.driver("", &lookups)
	e.claimCommitted(d, claimRow("old", 0xaa))
	e.deadLetter(d, "dead")
	e.claimCommitted(d, claimRow("old", 0xcc), claimRow("warm", 4)) // a duplicate: one lookup
	if n := lookups.n.Load(); n != 1 {
		t.Fatalf("%d lookup statements while warming up, want 1", n)
	}
	lookups.n.Store(0)

	tx, err := d.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(e.ctx) //nolint:errcheck // no-op after Commit
	got, err := tx.Claim(e.ctx, []store.ClaimRow{claimRow("new2", 2), claimRow("old", 0xbb), claimRow("dead", 3), claimRow("new1", 1)})
	if err != nil {
		t.Fatal(err)
	}
	wantClaims(t, got, []store.ClaimStatus{store.ClaimNew, store.ClaimExisting, store.ClaimDeadLettered, store.ClaimNew}, []byte{0, 0xaa, 0, 0})
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := lookups.n.Load(); n != 0 {
		t.Errorf("%d lookup statements, want 0", n)
	}
	e.claimCommitted(d, claimRow("new3", 5))                        // no duplicate: the plain claim next
	e.claimCommitted(d, claimRow("old", 0xdd), claimRow("new4", 6)) // so this duplicate is looked up
	if n := lookups.n.Load(); n != 1 {
		t.Errorf("%d lookup statements after a batch without duplicates, want 1", n)
	}
	want := map[string]byte{"old": 0xaa, "warm": 4, "new1": 1, "new2": 2, "new3": 5, "new4": 6}
	if got := e.inbox(); !maps.Equal(got, want) {
		t.Errorf("inbox %v, want %v", got, want)
	}
}

// TestClaimWaitingOnInFlightDelivery: B claims x while A's transaction
// holds x's claim. If A commits, x's row was committed after B's claim
// took its snapshot: the classifying claim neither inserts nor sees it,
// and the lookup statement finds it (ClaimExisting with A's hash, not ErrClaimRace). If A
// rolls back, B inserts x itself.
func TestClaimWaitingOnInFlightDelivery(t *testing.T) {
	t.Parallel()
	for _, commitA := range []bool{true, false} {
		name := map[bool]string{true: "first-commits", false: "first-rolls-back"}[commitA]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newClaimEnv(t)
			dA := e.driver("", nil)
			appB := "txinbox-claim-b-" + e.schema
			var lookups lookupCounter
			dB := e.driver(appB, &lookups)
			e.claimCommitted(dA, claimRow("old", 0xaa))
			e.claimCommitted(dB, claimRow("old", 0xaa)) // B meets a duplicate: its next claim classifies
			lookups.n.Store(0)

			ctx, cancel := context.WithTimeout(e.ctx, waitLimit)
			defer cancel()
			txA, err := dA.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer txA.Rollback(e.ctx) //nolint:errcheck // no-op after Commit
			if _, err := txA.Claim(ctx, []store.ClaimRow{claimRow("x", 0x11)}); err != nil {
				t.Fatal(err)
			}

			type outcome struct {
				res []store.ClaimResult
				err error
			}
			done := make(chan outcome, 1)
			txB, err := dB.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer txB.Rollback(e.ctx) //nolint:errcheck // no-op after Commit
			go func() {
				res, err := txB.Claim(ctx, []store.ClaimRow{claimRow("x", 0x22), claimRow("old", 0xbb), claimRow("new", 0x33)})
				done <- outcome{res, err}
			}()
			waitUntil(t, "B's claim waits for A's", func() (bool, error) {
				var waiting int
				err := e.admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE application_name = $1 AND wait_event_type = 'Lock'`, appB).Scan(&waiting)
				return waiting == 1, err
			})
			end := txA.Rollback
			if commitA {
				end = txA.Commit
			}
			if err := end(ctx); err != nil {
				t.Fatal(err)
			}
			b := receive(t, "B's claim", done)
			if b.err != nil {
				t.Fatalf("B's claim: %v (ErrClaimRace: %v)", b.err, errors.Is(b.err, store.ErrClaimRace))
			}
			if err := txB.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			want := map[string]byte{"old": 0xaa, "x": 0x22, "new": 0x33}
			wantLookups := int64(0)
			if commitA {
				wantClaims(t, b.res, []store.ClaimStatus{store.ClaimExisting, store.ClaimExisting, store.ClaimNew}, []byte{0x11, 0xaa, 0})
				want["x"], wantLookups = 0x11, 1
			} else {
				wantClaims(t, b.res, []store.ClaimStatus{store.ClaimNew, store.ClaimExisting, store.ClaimNew}, []byte{0, 0xaa, 0})
			}
			if n := lookups.n.Load(); n != wantLookups {
				t.Errorf("%d lookup statements, want %d", n, wantLookups)
			}
			if got := e.inbox(); !maps.Equal(got, want) {
				t.Errorf("inbox %v, want %v", got, want)
			}
		})
	}
}
