package mysqlstore

import "database/sql"

// NoteLockHeld notes on c's connection a named lock that no batch end
// released (as when the release failed), for the pool's check.
func NoteLockHeld(c *sql.Conn, name string) error {
	return c.Raw(func(dc any) error {
		dc.(*conn).holds([]string{name})
		return nil
	})
}

// ForceUnion makes the statements spell tables of rows as MySQL reads
// them (a UNION ALL of SELECTs), on MariaDB too, until the test ends.
func ForceUnion(cleanup func(func())) {
	forceUnion.Store(true)
	cleanup(func() { forceUnion.Store(false) })
}
