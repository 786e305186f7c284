package pgcore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txinbox/txinbox/store/internal/pgsql"
	"github.com/txinbox/txinbox/store/schema"
)

// Queries are a store's SQL, expanded once for its tables: the batch
// statements and checkpoint moves (pgsql), and the claims of the
// declarative effects it met, cached.
type Queries struct {
	pgsql.Statements
	pgsql.ReplyStatements
	// tables expands the declarative effects' claims, cached in effects
	// by their statements.
	tables  schema.Tables
	effects *sync.Map
	recent  *[pgsql.EffectForms]atomic.Pointer[recentEffect]
	// payloadReads caches ReadsPayload by the effect's statements,
	// lastReads its last answer.
	payloadReads *sync.Map
	lastReads    *atomic.Pointer[lastReads]
	// guard and mark are the expanded texts of pgsql.GuardCTE and of
	// what replaces it in every statement ("" for nothing: MarkGuard).
	guard, mark string
	// Duplicates says whether the store's last claim of the plain layout
	// met keys it did not insert: the next claim then uses
	// ClaimClassify, which saves the lookup's round trip.
	Duplicates *atomic.Bool
}

// NewQueries expands the statements for t; periods is the qualified
// table of the partitioned layout's periods.
func NewQueries(t schema.Tables, periods string) Queries {
	return Queries{
		Statements:      pgsql.NewStatements(t, periods),
		ReplyStatements: pgsql.NewReplyStatements(t),
		tables:          t,
		effects:         new(sync.Map),
		payloadReads:    new(sync.Map),
		lastReads:       new(atomic.Pointer[lastReads]),
		recent:          new([pgsql.EffectForms]atomic.Pointer[recentEffect]),
		Duplicates:      new(atomic.Bool),
	}
}

// MarkGuard makes every statement of q that arms the commit guard also
// mark the transaction as the batch's (pgsql.GuardMarkCTE).
func (q *Queries) MarkGuard() {
	q.guard, q.mark = q.tables.Expand(pgsql.GuardCTE), q.tables.Expand(pgsql.GuardMarkCTE)
	for _, s := range []*string{&q.Claim, &q.ClaimClassify, &q.ClaimCP, &q.ClaimClassifyCP, &q.ClaimPartitioned,
		&q.Advance, &q.AdvanceGuarded} {
		*s = strings.ReplaceAll(*s, q.guard, q.mark)
	}
}

// recentEffect is the claim last built or found for one form.
type recentEffect struct {
	statements []string
	sql        string
}

// EffectQuery returns the claim of the effect's statements in a form,
// cached: the statements last used in that form are compared without
// allocating (a processor has one effect), others are found by key.
func (q *Queries) EffectQuery(statements []string, f pgsql.EffectForm) string {
	slot := &q.recent[f.Index()]
	if r := slot.Load(); r != nil && slices.Equal(r.statements, statements) {
		return r.sql
	}
	key := fmt.Sprint(f, len(statements), "\x00", strings.Join(statements, "\x00"))
	v, ok := q.effects.Load(key)
	if !ok {
		v = pgsql.EffectClaim(q.tables, statements, f)
		if q.mark != "" {
			v = strings.ReplaceAll(v.(string), q.guard, q.mark)
		}
		q.effects.Store(key, v)
	}
	slot.Store(&recentEffect{statements: slices.Clone(statements), sql: v.(string)})
	return v.(string)
}

// ReadsPayload reports whether an effect's statements read a message's
// payload or headers, by asking PostgreSQL: the plan (EXPLAIN VERBOSE, not
// run) of the claim without the join, where payload and headers are
// settings (pgsql.EffectProbe). new_messages, read once, is inlined into
// the statement that reads it, and a column nobody reads is left out of
// the plan; a column read by name, by a whole-row reference (to_jsonb(m))
// or through a new_messages read twice (then materialised whole) shows in
// it. So the join is skipped only where the plan proves it unread. Asked
// once per statements; if the server refuses the probe (a mistake in the
// statements), the answer is yes, and the claim itself reports the
// mistake.
func (q *Queries) ReadsPayload(ctx context.Context, db Querier, statements []string) bool {
	// The answer last given is compared without allocating: a processor
	// has one effect, and this runs for every batch.
	if r := q.lastReads.Load(); r != nil && slices.Equal(r.statements, statements) {
		return r.reads
	}
	key := strings.Join(statements, "\x00")
	remember := func(reads bool) bool {
		q.payloadReads.Store(key, reads)
		q.lastReads.Store(&lastReads{statements: slices.Clone(statements), reads: reads})
		return reads
	}
	if v, ok := q.payloadReads.Load(key); ok {
		return remember(v.(bool))
	}
	reads, err := probePayload(ctx, db, pgsql.EffectProbe(q.tables, statements))
	if err != nil {
		// The server's refusal is an answer; a lost connection is not,
		// and the next claim asks again.
		if SQLState(err) != "" {
			return remember(true)
		}
		return true
	}
	return remember(reads)
}

// lastReads is the answer ReadsPayload gave last, and for what.
type lastReads struct {
	statements []string
	reads      bool
}

func probePayload(ctx context.Context, db Querier, claim string) (bool, error) {
	empty := []string{}
	rows, err := db.Query(ctx, "EXPLAIN (VERBOSE) "+claim, empty, empty, empty, empty, empty, [][]byte{}, []time.Time{})
	reads := false
	var line string
	err = ForEach(rows, err, []any{&line}, func() error {
		reads = reads || strings.Contains(line, pgsql.ProbeSetting)
		return nil
	})
	return reads, err
}
