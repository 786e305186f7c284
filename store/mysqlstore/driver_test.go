package mysqlstore_test

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/txinbox/txinbox/store/mysqlstore"
	"github.com/txinbox/txinbox/store/pgdbstore"
)

// TestWrongDriverRefused: New refuses a *sql.DB of go-sql-driver's own
// connections (no commit guard), saying how to open it; pgdbstore
// refuses a MySQL database of either kind, naming this store. Neither
// connects.
func TestWrongDriverRefused(t *testing.T) {
	plain := sql.OpenDB(must(mysql.NewConnector(mysql.NewConfig())))
	defer plain.Close()
	if _, err := mysqlstore.New(plain, mysqlstore.Options{}); err == nil || !strings.Contains(err.Error(), "mysqlstore.Open") {
		t.Errorf("New on go-sql-driver's own *sql.DB = %v, want a refusal naming mysqlstore.Open", err)
	}
	guarded, err := mysqlstore.Open("mysql://u@127.0.0.1:1/x")
	if err != nil {
		t.Fatal(err)
	}
	defer guarded.Close()
	if _, err := mysqlstore.New(guarded, mysqlstore.Options{}); err != nil {
		t.Errorf("New on mysqlstore.Open's *sql.DB: %v", err)
	}
	for _, db := range []*sql.DB{plain, guarded} {
		if _, err := pgdbstore.New(db, pgdbstore.Options{}); err == nil || !strings.Contains(err.Error(), "mysqlstore") {
			t.Errorf("pgdbstore.New on a MySQL *sql.DB (%T) = %v, want a refusal naming mysqlstore", db.Driver(), err)
		}
	}
	if _, err := mysqlstore.Connector(&mysql.Config{ClientFoundRows: true}); err == nil || !strings.Contains(err.Error(), "clientFoundRows") {
		t.Errorf("Connector with clientFoundRows = %v, want it refused", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
