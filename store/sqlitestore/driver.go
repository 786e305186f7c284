package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"time"

	"modernc.org/sqlite"
)

// postgresDrivers are the import paths of the database/sql drivers of
// PostgreSQL that a user may hand to New by mistake.
var postgresDrivers = []string{"github.com/jackc/pgx", "github.com/lib/pq"}

// driverProbeTimeout bounds the connection checkDriver opens to look at a
// driver it does not know.
const driverProbeTimeout = 30 * time.Second

// checkDriver refuses a database that the store cannot run on. What the
// store needs is modernc.org/sqlite's connection, whose commit hook guards
// the batch transactions (guard.go): a query such as sqlite_version()
// would let another SQLite driver (mattn/go-sqlite3) through, to fail at
// the first Begin. So modernc's driver is accepted as it is, a PostgreSQL
// driver is refused by its package without connecting, and any other
// driver (a wrapper) is accepted only if a connection it opens has the
// hook.
func checkDriver(db *sql.DB) error {
	drv := db.Driver()
	if _, ok := drv.(*sqlite.Driver); ok {
		return nil
	}
	t := reflect.TypeOf(drv)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for _, pg := range postgresDrivers {
		if strings.HasPrefix(t.PkgPath(), pg) {
			return fmt.Errorf("sqlitestore: New: the *sql.DB is a PostgreSQL database (driver %T): "+
				"sqlitestore runs on SQLite only; for PostgreSQL use pgstore.New with a *pgxpool.Pool", drv)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), driverProbeTimeout)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlitestore: New: driver %T: %w", drv, err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		if _, ok := dc.(hookRegisterer); !ok {
			return fmt.Errorf("sqlitestore: New: the *sql.DB's driver %T is not modernc.org/sqlite's (its connection %T has no commit hook): "+
				`open the database with sqlitestore.Open, or with sql.Open("sqlite", ...) after importing modernc.org/sqlite; `+
				"for PostgreSQL use pgstore.New with a *pgxpool.Pool", drv, dc)
		}
		return nil
	})
}
