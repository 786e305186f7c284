// Package sqlharness holds what the conformance suite's harnesses
// (store/storetest) on the database/sql stores share: the effects table
// (scope, message_id) written and counted, raw statements, commit and
// rollback on *sql.Tx, and the stored payload hash. pgdbtest, mysqltest
// and sqlitestore's tests fill in the rest (opening the store, a slow
// query).
package sqlharness

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"testing"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/schema"
	"github.com/txinbox/txinbox/store/storetest"
)

// Store is a database/sql store: its pool and its table names.
type Store interface {
	DB() *sql.DB
	Tables() schema.Tables
}

// Dialect is how one SQL dialect writes the harness's statements.
type Dialect struct {
	// Param is the placeholder of the n-th argument (1-based): "?" or
	// "$1".
	Param func(n int) string
	// Key is the expression joining scope and message_id with "/".
	Key string
}

// Question is the "?" placeholder of MySQL and SQLite.
func Question(int) string { return "?" }

// Dollar is PostgreSQL's "$n" placeholder.
func Dollar(n int) string { return "$" + strconv.Itoa(n) }

// Fill returns h with InsertEffect, Effects, Exec, Commit, Rollback and
// InboxPayloadHash set for a store on database/sql in dialect d; the
// drivers New and Open return must implement Store.
func Fill(h storetest.Harness[*sql.Tx], d Dialect) storetest.Harness[*sql.Tx] {
	insert := "INSERT INTO effects (scope, message_id) VALUES (" + d.Param(1) + ", " + d.Param(2) + ")"
	count := "SELECT " + d.Key + ", count(*) FROM effects GROUP BY 1"
	hash := "SELECT payload_hash FROM {inbox} WHERE scope = " + d.Param(1) + " AND message_id = " + d.Param(2)
	h.InsertEffect = func(ctx context.Context, tx *sql.Tx, scope, id string) error {
		_, err := tx.ExecContext(ctx, insert, scope, id)
		return err
	}
	h.Effects = func(t *testing.T, dr store.Driver[*sql.Tx]) map[string]int {
		rows, err := dr.(Store).DB().Query(count)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int{}
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				t.Fatal(err)
			}
			out[k] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	h.Exec = func(ctx context.Context, tx *sql.Tx, query string) error {
		_, err := tx.ExecContext(ctx, query)
		return err
	}
	h.Commit = func(_ context.Context, tx *sql.Tx) error { return tx.Commit() }
	h.Rollback = func(_ context.Context, tx *sql.Tx) error { return tx.Rollback() }
	h.InboxPayloadHash = func(t *testing.T, dr store.Driver[*sql.Tx], scope, id string) []byte {
		s := dr.(Store)
		var b []byte
		err := s.DB().QueryRow(s.Tables().Expand(hash), scope, id).Scan(&b)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return h
}
