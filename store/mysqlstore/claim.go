package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/schema"
)

// claimChunk keeps a claim statement well under MySQL's 65,535
// placeholders (7 per row).
const claimChunk = 1000

// rowsForm is how a statement spells a table of rows given as
// parameters (claim, new_messages).
type rowsForm uint8

const (
	// unionForm, SELECT ? ... UNION ALL SELECT ? ..., is read by MySQL
	// and MariaDB alike, with parameters interpolated or prepared.
	unionForm rowsForm = iota
	// valuesForm, WITH m (cols) AS (VALUES (?, ...), ...), is MariaDB's
	// table value constructor: cheaper to parse and plan than the union
	// (docs/mysqlstore.md), used on MariaDB with parameters interpolated
	// (MariaDB 10.11 misbinds a prepared statement's parameters in it;
	// MySQL spells it VALUES ROW(...)).
	valuesForm
)

// Claim claims the rows' keys: one INSERT ... SELECT ... ON DUPLICATE KEY
// UPDATE per chunk (a no-op update: the affected-row count is the number
// of rows inserted), in key order so that two batches lock shared keys in
// the same order. On MariaDB (the VALUES form) its RETURNING answers for
// every key it inserted or found (claim_id tells which); elsewhere, when
// it inserted fewer rows than it was given, and for the keys RETURNING
// did not answer (dead-lettered), one locking read of the keys tells the
// inserted from the stored and the dead-lettered ones.
func (t *myTx) Claim(ctx context.Context, rows []store.ClaimRow) ([]store.ClaimResult, error) {
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := strings.Compare(rows[a].Scope, rows[b].Scope); c != 0 {
			return c
		}
		return strings.Compare(rows[a].MessageID, rows[b].MessageID)
	})
	res := make([]store.ClaimResult, len(rows))
	now := formatTime(time.Now())
	for start := 0; start < len(order); start += claimChunk {
		if err := t.claim(ctx, rows, order[start:min(start+claimChunk, len(order))], res, now); err != nil {
			return res, err
		}
	}
	return res, nil
}

func (t *myTx) claim(ctx context.Context, rows []store.ClaimRow, idx []int, res []store.ClaimResult, now string) error {
	args := make([]any, 0, 4+7*len(idx))
	if t.form == unionForm { // the SELECT's processed_at and claim_id come before its derived table
		args = append(args, now, t.claimID)
	}
	for _, i := range idx {
		r := &rows[i]
		args = append(args, r.Scope, r.MessageID, r.Source, r.SourcePosition, r.PartitionKey, r.PayloadHash, formatTime(r.ReceivedAt))
	}
	if t.form == valuesForm { // after the WITH of the rows
		return t.claimReturning(ctx, rows, idx, res, append(args, now, t.claimID, t.claimID, t.claimID))
	}
	ins, err := t.b.Tx.ExecContext(ctx, t.d.claimSQL(t.form, len(idx)), args...)
	if err != nil {
		return err
	}
	n, err := ins.RowsAffected()
	if err != nil {
		return err
	}
	if int(n) == len(idx) {
		for _, i := range idx {
			res[i].Status = store.ClaimNew
		}
		return nil
	}
	return t.lookup(ctx, rows, idx, res)
}

// claimReturning is the claim on MariaDB: its RETURNING clause answers
// for every key it inserted or found stored (a duplicate key's row as it
// is, after its lock, like a locking read), so that only the keys it
// skipped, dead-lettered ones, need the lookup.
func (t *myTx) claimReturning(ctx context.Context, rows []store.ClaimRow, idx []int, res []store.ClaimResult, args []any) error {
	rs, err := t.b.Tx.QueryContext(ctx, t.d.claimSQL(t.form, len(idx)), args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	at := keyIndex(rows, idx)
	answered := 0
	for rs.Next() {
		var key store.Key
		var mine bool
		var hash []byte
		if err := rs.Scan(&key.Scope, &key.MessageID, &mine, &hash); err != nil {
			return err
		}
		i, ok := at[key]
		if !ok || res[i].Status != 0 {
			return errors.New("mysqlstore: the claim returned a key it was not given, or twice")
		}
		if mine {
			res[i].Status = store.ClaimNew
		} else {
			res[i] = store.ClaimResult{Status: store.ClaimExisting, StoredHash: hash}
		}
		answered++
	}
	// A failure while reading (a deadlock) closes the rows: Err has it.
	if err := errors.Join(rs.Err(), rs.Close()); err != nil {
		return err
	}
	if answered == len(idx) {
		return nil
	}
	var skipped []int
	for _, i := range idx {
		if res[i].Status == 0 {
			skipped = append(skipped, i)
		}
	}
	return t.lookup(ctx, rows, skipped, res)
}

// keyIndex maps the keys idx of rows to their index.
func keyIndex(rows []store.ClaimRow, idx []int) map[store.Key]int {
	at := make(map[store.Key]int, len(idx))
	for _, i := range idx {
		at[rows[i].Key] = i
	}
	return at
}

// claimSQLs caches the claim statements of a Driver's tables, by form
// and row count.
type claimSQLs struct {
	mu  sync.Mutex
	sql map[[2]int]string
}

// claimSQL is the claim of n rows in form f, cached.
func (d *Driver) claimSQL(f rowsForm, n int) string {
	d.claims.mu.Lock()
	defer d.claims.mu.Unlock()
	k := [2]int{int(f), n}
	q, ok := d.claims.sql[k]
	if !ok {
		if d.claims.sql == nil || len(d.claims.sql) > 256 {
			d.claims.sql = map[[2]int]string{}
		}
		q = claimSQL(d.t, f, n)
		d.claims.sql[k] = q
	}
	return q
}

// claimCols are the claim's columns of a row, in its parameters' order.
var claimCols = []string{"scope", "message_id", "source", "source_position", "partition_key", "payload_hash", "received_at"}

// claimSQL inserts n rows, skipping dead-lettered keys (an anti-join,
// which MariaDB plans cheaper than NOT EXISTS); the parameters are the
// rows' seven columns, and processed_at and claim_id. In the values form
// (MariaDB) it returns each row it inserted or found: scope, message_id,
// whether claim_id is the second-last parameter, and the payload hash
// unless it is the last parameter. The union form's rows follow the
// SELECT's parameters; the values form's rows come first.
func claimSQL(t schema.Tables, f rowsForm, n int) string {
	var b strings.Builder
	b.WriteString(t.Expand("INSERT INTO {inbox} (scope, message_id, source, source_position, partition_key, payload_hash, received_at, processed_at, claim_id)\n"))
	from := "m"
	if f == valuesForm {
		b.WriteString("WITH m (" + strings.Join(claimCols, ", ") + ") AS (")
		paramRows(&b, f, claimCols, n)
		b.WriteString(")\n")
	} else {
		var sb strings.Builder
		paramRows(&sb, f, claimCols, n)
		from = "(" + sb.String() + ") AS m"
	}
	b.WriteString("SELECT m.scope, m.message_id, m.source, m.source_position, m.partition_key, m.payload_hash, m.received_at, ?, ? FROM " + from)
	b.WriteString(t.Expand(`
LEFT JOIN {dead_letters} d ON d.scope = m.scope AND d.key_id = m.message_id WHERE d.scope IS NULL
ON DUPLICATE KEY UPDATE claim_id = {inbox}.claim_id`))
	if f == valuesForm {
		b.WriteString("\nRETURNING scope, message_id, claim_id = ?, IF(claim_id = ?, NULL, payload_hash)")
	}
	return b.String()
}

// paramRows writes n rows of len(cols) parameters (cols names them in the
// union form; the values form takes their number from expr's or cols'
// length). exprs, when given, are the parameters' expressions ("?" each
// by default), in the union form the columns are named exprs AS cols.
func paramRows(b *strings.Builder, f rowsForm, cols []string, n int, exprs ...string) {
	width := len(cols)
	if len(exprs) > 0 {
		width = len(exprs)
	}
	expr := func(j int) string {
		if len(exprs) > 0 {
			return exprs[j]
		}
		return "?"
	}
	for i := range n {
		switch {
		case f == valuesForm && i == 0:
			b.WriteString("VALUES (")
		case f == valuesForm:
			b.WriteString(", (")
		case i == 0:
			b.WriteString("SELECT ")
		default:
			b.WriteString(" UNION ALL SELECT ")
		}
		for j := range width {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(expr(j))
			if f == unionForm && i == 0 {
				b.WriteString(" AS " + cols[j])
			}
		}
		if f == valuesForm {
			b.WriteByte(')')
		}
	}
}

// lookup reads, with a locking read (the newest committed rows, whatever
// the snapshot), what the inbox and the dead letters hold for the keys:
// one statement, the keys in IN lists (a range of the inbox's primary key
// and of the dead letters' unique key on (scope, key_id), each forced:
// right after a TRUNCATE the statistics would make a scan look cheaper,
// which would lock every row it reads).
func (t *myTx) lookup(ctx context.Context, rows []store.ClaimRow, idx []int, res []store.ClaimResult) error {
	where, args := keysWhere(rows, idx, "message_id")
	dwhere, dargs := keysWhere(rows, idx, "key_id")
	args = append(append([]any{t.claimID}, args...), dargs...)
	rs, err := t.b.Tx.QueryContext(ctx, t.d.t.Expand(`(SELECT scope, message_id, claim_id = ?, payload_hash, 0 FROM {inbox} FORCE INDEX (PRIMARY) WHERE `+where+` LOCK IN SHARE MODE)
UNION ALL (SELECT scope, key_id, NULL, payload_hash, 1 FROM {dead_letters} FORCE INDEX ({prefix}dead_letters_key_idx) WHERE `+dwhere+` LOCK IN SHARE MODE)`), args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	at := keyIndex(rows, idx)
	// found: 1 a dead letter answered, 2 the inbox did (and wins).
	found := make(map[int]int, len(idx))
	for rs.Next() {
		var scope, id string
		var mine sql.NullBool
		var hash []byte
		var dead bool
		if err := rs.Scan(&scope, &id, &mine, &hash, &dead); err != nil {
			return err
		}
		i, ok := at[store.Key{Scope: scope, MessageID: id}]
		if !ok {
			return errors.New("mysqlstore: the claim's lookup returned a key it did not ask for")
		}
		r := &res[i]
		switch {
		case !dead && mine.Valid && mine.Bool:
			*r, found[i] = store.ClaimResult{Status: store.ClaimNew}, 2
		case !dead:
			*r, found[i] = store.ClaimResult{Status: store.ClaimExisting, StoredHash: hash}, 2
		case found[i] == 0:
			*r, found[i] = store.ClaimResult{Status: store.ClaimDeadLettered, StoredHash: hash}, 1
		}
	}
	if err := rs.Err(); err != nil {
		return err
	}
	if len(found) != len(idx) {
		return store.ErrClaimRace
	}
	return nil
}

// keysWhere is the condition of the keys idx of rows (sorted by scope):
// (scope = ? AND col IN (?, ...)) OR ..., one term per scope.
func keysWhere(rows []store.ClaimRow, idx []int, col string) (string, []any) {
	return keysWhereOf(len(idx), func(k int) *store.Key { return &rows[idx[k]].Key }, col)
}

// keysWhereOf is keysWhere of n keys, key(k) the k-th, sorted by scope or
// not (a scope that comes back gets a term of its own again).
func keysWhereOf(n int, key func(k int) *store.Key, col string) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, n+1)
	for k := range n {
		r := key(k)
		if k == 0 || key(k-1).Scope != r.Scope {
			if k > 0 {
				b.WriteString(") OR ")
			}
			b.WriteString("(scope = ? AND " + col + " IN (?")
			args = append(args, r.Scope, r.MessageID)
			continue
		}
		b.WriteString(", ?")
		args = append(args, r.MessageID)
	}
	b.WriteString("))")
	return "(" + b.String() + ")", args
}
