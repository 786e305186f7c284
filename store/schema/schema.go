// Package schema names the tables of txinbox's SQL stores (the inbox's,
// the outbox's, the AS4 endpoint's) and expands their embedded migration
// templates: the part of a store that does not depend on its connection
// library, shared by pgstore, sqlitestore, the outbox and AS4 tables, and
// open to a store of another package. Names are validated identifiers,
// never user-built SQL.
package schema

import (
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// MaxIdentLen keeps every generated name (prefix + table + index suffix)
// under PostgreSQL's 63-byte limit.
const MaxIdentLen = 32

// ValidateIdent checks that s may be used as a schema name or table prefix:
// lower-case letters, digits and underscores, not starting with a digit.
// field names the option in the error.
func ValidateIdent(field, s string, allowEmpty bool) error {
	if s == "" && allowEmpty {
		return nil
	}
	if len(s) > MaxIdentLen || !identRE.MatchString(s) {
		return fmt.Errorf("invalid %s %q: use 1 to %d lower-case letters, digits and underscores, not starting with a digit", field, s, MaxIdentLen)
	}
	return nil
}

// Tables holds the quoted, qualified names of the inbox tables.
type Tables struct {
	Prefix      string // unquoted, for index names
	Inbox       string
	Attempts    string
	DeadLetters string
	Drift       string
	Checkpoints string
	Audit       string
	Outbox      string
	Migrations  string
	// TxGuard and TxGuardCheck are PostgreSQL's commit guard: a table the
	// claim marks and the function of its deferred trigger.
	TxGuard      string
	TxGuardCheck string
}

// NewTables qualifies the table names with schema (may be empty) and
// prefix, both already validated.
func NewTables(schema, prefix string) Tables {
	q := func(name string) string {
		n := `"` + prefix + name + `"`
		if schema != "" {
			n = `"` + schema + `".` + n
		}
		return n
	}
	return Tables{
		Prefix: prefix, Inbox: q("inbox"), Attempts: q("attempts"), DeadLetters: q("dead_letters"),
		Drift: q("drift"), Checkpoints: q("checkpoints"), Audit: q("audit"), Outbox: q("outbox"), Migrations: q("schema_migrations"),
		TxGuard: q("tx_guard"), TxGuardCheck: q("tx_guard_check"),
	}
}

// Expand replaces the {inbox}, {attempts}, {dead_letters}, {drift},
// {checkpoints}, {audit}, {outbox}, {migrations}, {tx_guard},
// {tx_guard_check} and {prefix} placeholders of a SQL template.
func (t Tables) Expand(sql string) string {
	return strings.NewReplacer(
		"{inbox}", t.Inbox, "{attempts}", t.Attempts, "{dead_letters}", t.DeadLetters,
		"{drift}", t.Drift, "{checkpoints}", t.Checkpoints, "{audit}", t.Audit, "{outbox}", t.Outbox, "{migrations}", t.Migrations,
		"{tx_guard}", t.TxGuard, "{tx_guard_check}", t.TxGuardCheck, "{prefix}", t.Prefix,
	).Replace(sql)
}

// Migration is one versioned schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string // expanded
}

// Load reads NNN_name.sql files from fsys, in version order, expanded for t.
func Load(fsys fs.FS, t Tables) ([]Migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	ms := make([]Migration, 0, len(names))
	for _, n := range names {
		num, rest, ok := strings.Cut(n, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration file %q: name must be NNN_name.sql", n)
		}
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: strings.TrimSuffix(rest, ".sql"), SQL: t.Expand(string(b))})
	}
	return ms, nil
}

// Sub returns the subdirectory dir of fsys; it panics only when dir is not a
// valid path, a programmer's mistake in an embed directive.
func Sub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
