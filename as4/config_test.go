package as4_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4pg"
	"github.com/txinbox/txinbox/as4/as4sqlite"
	"github.com/txinbox/txinbox/store/pgstore"
)

func TestConfigErrorsNameTheField(t *testing.T) {
	t.Parallel()
	driver, err := pgstore.New(unconnectedPool(t), pgstore.Options{})
	must(t, err)
	st, err := as4pg.New(unconnectedPool(t), as4pg.Options{})
	must(t, err)
	for field, cfg := range map[string]as4.Config[pgx.Tx]{
		"Store":                 {},
		"Inbox.Handler":         {Store: st, Inbox: txinbox.Config[pgx.Tx]{Handler: func(ctx context.Context, tx pgx.Tx, m *txinbox.Message) error { return nil }}},
		"MaxBodyBytes":          {Store: st, MaxBodyBytes: -1},
		"MaxDepth":              {Store: st, MaxDepth: -1},
		"MaxElements":           {Store: st, MaxElements: -1},
		"MaxConcurrentRequests": {Store: st, MaxConcurrentRequests: -1},
		"MaxDecompressedBytes":  {Store: st, MaxDecompressedBytes: -1},
		"Agreements[0]":         {Store: st, Agreements: []as4.Agreement{{Name: "a"}}},
		"Agreements[1]":         {Store: st, Agreements: []as4.Agreement{{Name: "a", From: as4.PartyRef{ID: "x"}, To: as4.PartyRef{ID: "y"}}, {Name: "a", From: as4.PartyRef{ID: "x"}, To: as4.PartyRef{ID: "y"}}}},
	} {
		_, err := as4.New(driver, cfg)
		var ce *txinbox.ConfigError
		if !errors.As(err, &ce) || ce.Field != field {
			t.Errorf("%s: got %v", field, err)
		}
	}
}

func TestStoreOptionsAreValidated(t *testing.T) {
	t.Parallel()
	if _, err := as4pg.New(nil, as4pg.Options{}); err == nil {
		t.Error("as4pg.New(nil) succeeded")
	}
	if _, err := as4pg.New(unconnectedPool(t), as4pg.Options{TablePrefix: "Bad-Prefix"}); err == nil {
		t.Error("as4pg accepted a bad prefix")
	}
	if _, err := as4sqlite.New(nil, as4sqlite.Options{}); err == nil {
		t.Error("as4sqlite.New(nil) succeeded")
	}
}

// unconnectedPool returns a pool that never connects: enough for
// constructors.
func unconnectedPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none")
	must(t, err)
	t.Cleanup(pool.Close)
	return pool
}
