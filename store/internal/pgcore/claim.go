package pgcore

import (
	"context"
	"fmt"

	"github.com/txinbox/txinbox/store"
)

// ClassifySeen classifies a key that a claim did not insert from what a
// statement saw of it (the inbox row's and the dead letter's payload
// hashes), and reports whether it saw it at all.
func ClassifySeen(r *store.ClaimResult, hash, dead []byte) bool {
	switch {
	case hash != nil:
		r.Status, r.StoredHash = store.ClaimExisting, append([]byte(nil), hash...)
	case dead != nil:
		r.Status, r.StoredHash = store.ClaimDeadLettered, append([]byte(nil), dead...)
	default:
		return false
	}
	return true
}

// AfterClaim chooses the next claim from this one's answer (plain layout)
// and looks up, through q, the keys the claim left unanswered: every key
// not inserted, or after a classifying claim those whose conflicting row
// was committed after the claim's snapshot. key(i) is the i-th row's key.
func AfterClaim(ctx context.Context, c *Core, q Querier, l *Layout, res []store.ClaimResult, key func(int) store.Key) error {
	if !l.Partitioned {
		c.q.expectDuplicates(res)
	}
	var pending []int
	for i := range res {
		if res[i].Status == 0 {
			pending = append(pending, i)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	keys := make([]store.Key, len(pending))
	for j, i := range pending {
		keys[j] = key(i)
	}
	return Lookup(ctx, c, q, l, keys, func(j int, hash, dead []byte) error {
		if i := pending[j]; !ClassifySeen(&res[i], hash, dead) {
			return fmt.Errorf("%w: %q/%q", store.ErrClaimRace, keys[j].Scope, keys[j].MessageID)
		}
		return nil
	})
}

// expectDuplicates chooses the next claim from this one's answer. The
// claim that also classifies the keys it did not insert saves a round
// trip to batches with duplicates, but costs every batch a little more
// server time than the one that returns the inserted keys only; with
// duplicates (redeliveries) coming in runs, the last batch is a good guess
// for the next one.
func (q *Queries) expectDuplicates(res []store.ClaimResult) {
	dups := false
	for i := range res {
		if res[i].Status != store.ClaimNew {
			dups = true
			break
		}
	}
	if q.Duplicates.Load() != dups {
		q.Duplicates.Store(dups)
	}
}

// Distinct reports whether no key repeats among n rows, as Claim's
// contract says: a classifying claim would report every copy of a key
// inserted, the plain claim only one.
func Distinct(n int, key func(int) store.Key) bool {
	seen := make(map[store.Key]struct{}, n)
	for i := range n {
		k := key(i)
		if _, ok := seen[k]; ok {
			return false
		}
		seen[k] = struct{}{}
	}
	return true
}
