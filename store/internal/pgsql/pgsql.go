// Package pgsql is the SQL text of txinbox's PostgreSQL store: the
// statements of a batch transaction (the claim, the lookup, drift, failed
// attempts, dead letters, checkpoints), expanded once for a store's
// tables, and the statements of the commit guard. It runs nothing and
// imports no driver: pgstore executes the text with pgx, and a store on
// another connection library speaks the same dialect with the same text.
//
// Every value is a bound parameter; only validated identifiers
// (schema.Tables) are spliced in.
package pgsql

// Qualify quotes name (already validated) and qualifies it with schema.
func Qualify(schema, name string) string {
	if schema == "" {
		return `"` + name + `"`
	}
	return `"` + schema + `"."` + name + `"`
}
