package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/txinbox/txinbox/store"
)

// EffectSQL documents the form of a declarative effect's statements
// (txinbox.Config.Effect) on MySQL and MariaDB: each is one statement
// (INSERT ... SELECT, UPDATE or DELETE with a join, ...) that reads the
// batch's new messages from the table reference new_messages. MySQL has
// no INSERT ... RETURNING (nor a data-modifying WITH), so the effect
// cannot join the claim's statement: it runs right after it, in the same
// transaction, once per batch (in pieces of at most 1,000 messages), over
// the rows the claim inserted (none: it does not run). The store puts a
// derived table of those messages in the place of each new_messages that
// is not a column's qualifier (new_messages.scope stays), aliased
// new_messages unless the statement gives an alias. For example:
//
//	INSERT INTO invoices (scope, message_id, body) SELECT scope, message_id, payload FROM new_messages
//
// Its columns: scope, message_id, source, source_position and
// partition_key (utf8mb4 text), payload (binary), headers (JSON text,
// NULL for ""), received_at (DATETIME(6), UTC). Statements whose text
// names neither payload, headers nor * read the other columns from the
// inbox rows the claim inserted, by their keys, rather than from
// parameters: less to send and to parse.
const EffectSQL = "new_messages(scope, message_id, source, source_position, partition_key, payload, headers, received_at)"

var (
	_ store.EffectClaimer = (*myTx)(nil)
	_ store.EffectReader  = (*Driver)(nil)
	_ store.EffectChecker = (*Driver)(nil)
)

// effectChunk caps the messages of one effect statement (8 parameters a
// message, under MySQL's 65,535), effectBytes the bytes of its values
// (under max_allowed_packet, 16 MiB by default in MariaDB 10.11).
const (
	effectChunk = 1000
	effectBytes = 4 << 20
)

// ClaimWithEffect implements store.EffectClaimer: Claim, then each of
// the effect's statements over the rows it inserted, in the same
// transaction (EffectSQL).
func (t *myTx) ClaimWithEffect(ctx context.Context, rows []store.EffectRow, statements []string) ([]store.ClaimResult, error) {
	claim := make([]store.ClaimRow, len(rows))
	for i := range rows {
		claim[i] = rows[i].ClaimRow
	}
	res, err := t.Claim(ctx, claim)
	if err != nil {
		return res, err
	}
	var fresh []int
	for i := range res {
		if res[i].Status == store.ClaimNew {
			fresh = append(fresh, i)
		}
	}
	payload := readsMessages(statements)
	forms := make([]effectForm, len(statements))
	for i, s := range statements {
		forms[i] = effectFormOf(s)
	}
	for len(fresh) > 0 {
		n := effectPiece(rows, fresh)
		var derived string
		var one []any
		if payload {
			derived, one = newMessagesSQL(t.form, rows, fresh[:n])
		} else {
			derived, one = t.newMessagesStored(rows, fresh[:n])
		}
		for _, f := range forms {
			q, args := f.bind(derived, one)
			if _, err := t.b.Tx.ExecContext(ctx, q, args...); err != nil {
				return res, err
			}
		}
		fresh = fresh[n:]
	}
	return res, nil
}

// effectPiece is how many of fresh one statement takes: at most
// effectChunk, and at least one whatever its size.
func effectPiece(rows []store.EffectRow, fresh []int) int {
	size := 0
	for n, i := range fresh {
		r := &rows[i]
		size += len(r.Scope) + len(r.MessageID) + len(r.Source) + len(r.SourcePosition) + len(r.PartitionKey) + 2*len(r.Payload) + len(r.Headers) + 64
		if n > 0 && (n == effectChunk || size > effectBytes) {
			return n
		}
	}
	return len(fresh)
}

// readsMessages reports whether statements may read new_messages'
// payload or headers: their text names payload, headers or * (in any
// case: SQL's column names are case-insensitive).
func readsMessages(statements []string) bool {
	for _, s := range statements {
		s = strings.ToLower(s)
		if strings.Contains(s, "payload") || strings.Contains(s, "headers") || strings.Contains(s, "*") {
			return true
		}
	}
	return false
}

// effectForm is an effect's statement cut around its table references to
// new_messages: parts[0] ref parts[1] ref ... parts[n]; alias[i] tells
// whether the statement aliases the i-th reference itself.
type effectForm struct {
	parts []string
	alias []bool
}

var effectForms sync.Map // statement -> effectForm

// effectFormOf cuts statement (effectForm), once per statement.
func effectFormOf(statement string) effectForm {
	if f, ok := effectForms.Load(statement); ok {
		return f.(effectForm)
	}
	f := cutEffect(statement)
	effectForms.Store(statement, f)
	return f
}

// cutEffect finds the table references to new_messages (the word, or
// `new_messages`, not followed by a dot) and whether each is aliased.
func cutEffect(s string) effectForm {
	var f effectForm
	last := 0
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "new_messages")
		if j < 0 {
			break
		}
		start, end := i+j, i+j+len("new_messages")
		i = end
		if start > 0 && s[start-1] == '`' && end < len(s) && s[end] == '`' {
			start, end = start-1, end+1
		} else if (start > 0 && identByte(s[start-1])) || (end < len(s) && identByte(s[end])) {
			continue
		}
		if start > 0 && s[start-1] == '.' {
			continue // db.new_messages: another table
		}
		next := strings.TrimLeft(s[end:], " \t\r\n")
		if strings.HasPrefix(next, ".") {
			continue // new_messages.column
		}
		f.parts = append(f.parts, s[last:start])
		f.alias = append(f.alias, aliased(next))
		last = end
		i = end
	}
	f.parts = append(f.parts, s[last:])
	return f
}

// identByte reports whether b may be part of an unquoted identifier.
func identByte(b byte) bool {
	return b == '_' || b == '$' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

// notAlias are the words that may follow a table reference without being
// its alias.
var notAlias = map[string]bool{"WHERE": true, "JOIN": true, "INNER": true, "LEFT": true, "RIGHT": true, "CROSS": true,
	"NATURAL": true, "STRAIGHT_JOIN": true, "ON": true, "USING": true, "GROUP": true, "ORDER": true, "LIMIT": true,
	"HAVING": true, "WINDOW": true, "UNION": true, "EXCEPT": true, "INTERSECT": true, "FOR": true, "LOCK": true,
	"SET": true, "RETURNING": true, "INTO": true, "FULL": true, "OUTER": true, "USE": true, "IGNORE": true, "FORCE": true}

// aliased reports whether next, the text after a table reference, starts
// with its alias (AS alias, or a word that is no keyword).
func aliased(next string) bool {
	n := 0
	for n < len(next) && identByte(next[n]) {
		n++
	}
	if n == 0 {
		return strings.HasPrefix(next, "`") // a quoted alias
	}
	w := strings.ToUpper(next[:n])
	return w == "AS" || !notAlias[w]
}

// bind is the statement with derived in the place of its references to
// new_messages, and its parameters: one for each.
func (f effectForm) bind(derived string, one []any) (string, []any) {
	if len(f.parts) == 1 {
		return f.parts[0], nil
	}
	var b strings.Builder
	var args []any
	for k, p := range f.parts {
		b.WriteString(p)
		if k == len(f.parts)-1 {
			break
		}
		b.WriteString(derived)
		if !f.alias[k] {
			b.WriteString(" AS new_messages")
		}
		b.WriteByte(' ')
		args = append(args, one...)
	}
	return b.String(), args
}

// newMessagesStored is new_messages without payload and headers: the
// inbox rows of the keys fresh of rows that this transaction inserted,
// read by their primary key (a parameter a message).
func (t *myTx) newMessagesStored(rows []store.EffectRow, fresh []int) (string, []any) {
	where, args := keysWhereOf(len(fresh), func(k int) *store.Key { return &rows[fresh[k]].Key }, "message_id")
	return t.d.t.Expand("(SELECT CONVERT(scope USING utf8mb4) AS scope, CONVERT(message_id USING utf8mb4) AS message_id, source, source_position, " +
		"partition_key, received_at FROM {inbox} FORCE INDEX (PRIMARY) WHERE " + where + " AND claim_id = ?)"), append(args, t.claimID)
}

// newMessagesSQL is new_messages with payload and headers: a derived
// table of the messages fresh of rows in form f, their values as
// parameters.
func newMessagesSQL(f rowsForm, rows []store.EffectRow, fresh []int) (string, []any) {
	cols := []string{"scope", "message_id", "source", "source_position", "partition_key", "payload", "headers", "received_at"}
	exprs := []string{"?", "?", "?", "?", "?", "?", "?", "CAST(? AS DATETIME(6))"}
	var b strings.Builder
	b.WriteByte('(')
	if f == valuesForm {
		b.WriteString("WITH v (" + strings.Join(cols, ", ") + ") AS (")
		paramRows(&b, f, cols, len(fresh), exprs...)
		b.WriteString(") SELECT * FROM v")
	} else {
		paramRows(&b, f, cols, len(fresh), exprs...)
	}
	b.WriteByte(')')
	args := make([]any, 0, len(cols)*len(fresh))
	for _, i := range fresh {
		r := &rows[i]
		var h any
		if r.Headers != "" {
			h = r.Headers
		}
		args = append(args, r.Scope, r.MessageID, r.Source, r.SourcePosition, r.PartitionKey, r.Payload, h, formatTime(r.ReceivedAt))
	}
	return b.String(), args
}

// EffectReadsMessages implements store.EffectReader from the statements'
// text: whether it names payload, headers or *.
func (d *Driver) EffectReadsMessages(_ context.Context, statements []string) bool {
	return readsMessages(statements)
}

// JoinsEffects implements store.EffectChecker: every MySQL and MariaDB
// inbox runs declarative effects.
func (d *Driver) JoinsEffects(context.Context) (bool, error) { return true, nil }

// CheckEffect implements store.EffectChecker: the server prepares each
// statement over a derived table of one message (a syntax error, an
// unknown table or column fails here), closed unrun.
func (d *Driver) CheckEffect(ctx context.Context, statements []string) error {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	derived, _ := newMessagesSQL(unionForm, []store.EffectRow{{}}, []int{0})
	for i, s := range statements {
		q, _ := effectFormOf(s).bind(derived, nil)
		if err := prepareCheck(ctx, c, q); err != nil {
			return fmt.Errorf("mysqlstore: the effect's statement %d: %w", i+1, err)
		}
	}
	return nil
}

// prepareCheck prepares q on the server, whatever interpolateParams
// says, and deallocates it.
func prepareCheck(ctx context.Context, c *sql.Conn, q string) error {
	if _, err := c.ExecContext(ctx, "PREPARE txinbox_check FROM ?", q); err != nil {
		return err
	}
	_, err := c.ExecContext(ctx, "DEALLOCATE PREPARE txinbox_check")
	return err
}
