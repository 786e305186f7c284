package pgstore

import (
	"sync"
	"sync/atomic"

	"github.com/txinbox/txinbox/store/internal/pgsql"
	"github.com/txinbox/txinbox/store/schema"
)

// queries are the driver's SQL, expanded once for its tables: the batch
// statements and checkpoint moves (pgsql, shared with any PostgreSQL
// store), and the claims of the declarative effects it met, cached.
type queries struct {
	pgsql.Statements
	pgsql.ReplyStatements
	// tables expands the declarative effects' claims, cached in effects
	// by their statements (effect.go).
	tables  schema.Tables
	effects *sync.Map
	recent  *[pgsql.EffectForms]atomic.Pointer[recentEffect]
	// payloadReads caches readsPayload by the effect's statements,
	// lastReads its last answer.
	payloadReads *sync.Map
	lastReads    *atomic.Pointer[lastReads]
	// duplicates says whether the driver's last claim of the plain
	// layout met keys it did not insert: the next claim then uses
	// ClaimClassify, which saves the lookup's round trip.
	duplicates *atomic.Bool
}

func newQueries(t schema.Tables, periods string) queries {
	return queries{
		Statements:      pgsql.NewStatements(t, periods),
		ReplyStatements: pgsql.NewReplyStatements(t),
		tables:          t,
		effects:         new(sync.Map),
		payloadReads:    new(sync.Map),
		lastReads:       new(atomic.Pointer[lastReads]),
		recent:          new([pgsql.EffectForms]atomic.Pointer[recentEffect]),
		duplicates:      new(atomic.Bool),
	}
}
