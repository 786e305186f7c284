package outbox_test

import (
	"context"
	"database/sql"
	"regexp"
	"testing"

	"github.com/txinbox/txinbox/internal/mysqltest"
	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/outbox/outboxmy"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

var dollar = regexp.MustCompile(`\$[0-9]+`)

// openMy opens the MySQL inbox at url.
func openMy(t testing.TB, url string) *mysqlstore.Driver {
	d, err := mysqlstore.New(mysqltest.Open(t, url, 8), mysqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// newMy is the outbox table of a MySQL or MariaDB database of its own.
func newMy(t *testing.T) *db {
	url := mysqltest.NewDatabase(t)
	d := openMy(t, url)
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	my := outboxmy.New(d)
	x := &db{kind: "mysql", many: 1000, desc: url, store: my, table: d.Tables().Outbox}
	x.open = func(t *testing.T) outbox.Store { return outboxmy.New(openMy(t, url)) }
	x.openCrashable = func(t *testing.T) (outbox.Store, func()) {
		// One connection, killed by the server: the relay's database
		// goes away under its claim.
		d2 := openMy(t, url)
		d2.DB().SetMaxOpenConns(1)
		var id int64
		if err := d2.DB().QueryRow("SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		return outboxmy.New(d2), func() { _, _ = d.DB().Exec("KILL ?", id) }
	}
	x.tryAdd = func(es ...outbox.Entry) error {
		tx, err := d.DB().Begin()
		if err != nil {
			return err
		}
		for _, e := range es {
			if err := my.Add(context.Background(), tx, e); err != nil {
				tx.Rollback()
				return err
			}
		}
		return tx.Commit()
	}
	x.exec = func(t *testing.T, q string, args ...any) {
		t.Helper()
		if _, err := d.DB().Exec(dollar.ReplaceAllString(q, "?"), args...); err != nil {
			t.Fatal(err)
		}
	}
	x.count = func(t *testing.T, where string) int {
		t.Helper()
		var n int
		if err := d.DB().QueryRow("SELECT count(*) FROM " + x.table + " WHERE " + where).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	x.text = func(t *testing.T, col string, id int64) string {
		t.Helper()
		var s sql.NullString
		if err := d.DB().QueryRow("SELECT CAST("+col+" AS CHAR) FROM "+x.table+" WHERE id = ?", id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		if !s.Valid {
			return "<nil>"
		}
		return s.String
	}
	return x
}
