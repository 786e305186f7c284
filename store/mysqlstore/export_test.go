package mysqlstore

// ForceUnion makes the statements spell tables of rows as MySQL reads
// them (a UNION ALL of SELECTs), on MariaDB too, until the test ends.
func ForceUnion(cleanup func(func())) {
	forceUnion.Store(true)
	cleanup(func() { forceUnion.Store(false) })
}
