package pgdbstore_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgdbstore"
)

// TestDurability: pgstore's reading over database/sql: the defaults lose
// nothing; synchronous_commit = off set for the database is read as its
// effective value on a store connection and reported as a risk.
func TestDurability(t *testing.T) {
	ctx := context.Background()
	admin := testdb.Require(t)
	name := testdb.NewDatabase(t, admin)
	db, err := sql.Open("pgx", testdb.WithDatabase(t, testdb.URL(), name))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d, err := pgdbstore.New(db, pgdbstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	du, err := d.Durability(ctx)
	if err != nil || len(du.Risks) != 0 || len(du.Settings) == 0 || du.Settings[0].Name != "fsync" {
		t.Fatalf("Durability on the defaults = %+v, %v; want fsync first and no risk", du, err)
	}
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+name+" SET synchronous_commit = off"); err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(0) // new connections, which take the database's default
	du, err = d.Durability(ctx)
	if err != nil || len(du.Risks) != 1 || du.Risks[0].Setting != "synchronous_commit=off" {
		t.Fatalf("Durability after ALTER DATABASE ... synchronous_commit = off = %+v, %v; want its risk", du.Risks, err)
	}
}
