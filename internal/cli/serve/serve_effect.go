package serve

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/outbox"
)

// Effect modes of serve: what runs, in the inbox transaction, for each new
// message, for users who do not write Go.
const (
	effectNone   = "none"   // the AS4 tables only
	effectOutbox = "outbox" // plus each payload copied to the outbox table
	EffectSQL    = "sql"    // plus the configured statements
)

// sqlParams documents the parameters bound to --effect-sql statements. A
// statement receives $1 up to the highest it names, with the types of
// sqlParamOIDs declared on PostgreSQL, so that it may skip some ($1, $2,
// $7) and cast others ($7::bigint).
const sqlParams = "AS4: $1 scope, $2 inbox key, $3 ebMS MessageId, $4 From PartyId, $5 To PartyId, $6 Service, " +
	"$7 Action, $8 ConversationId, $9 first payload (bytes, or NULL), $10 received_at; " +
	"brokers: $1 scope, $2 inbox key, $3 message id, $4 source (kafka, amqp, sqs, nats), $5 topic, queue or stream, " +
	"$6 partition key, $7 position, $8 headers (JSON), $9 payload, $10 received_at"

// sqlParamOIDs are the PostgreSQL types of the --effect-sql parameters,
// the same for AS4 and the brokers: $1-$8 text, $9 bytea, $10
// timestamptz.
var sqlParamOIDs = []uint32{pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.TextOID,
	pgtype.TextOID, pgtype.TextOID, pgtype.ByteaOID, pgtype.TimestamptzOID}

// pgTypedExec runs an --effect-sql statement with the parameter types of
// sqlParamOIDs declared, rather than left to PostgreSQL to infer (which
// fails for a parameter the statement does not name). args are strings,
// []byte (nil is NULL) and a time.Time, in the order of sqlParams.
func pgTypedExec(ctx context.Context, tx pgx.Tx, sqlText string, args ...any) error {
	values := make([][]byte, len(args))
	formats := make([]int16, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			values[i] = []byte(v)
		case []byte:
			values[i], formats[i] = v, 1 // binary bytea is the bytes themselves
		case time.Time:
			values[i] = []byte(v.UTC().Format("2006-01-02 15:04:05.999999Z07:00"))
		default:
			return fmt.Errorf("--effect-sql parameter $%d: unexpected %T", i+1, a)
		}
	}
	return tx.Conn().PgConn().ExecParams(ctx, sqlText, values, sqlParamOIDs[:len(args)], formats, nil).Read().Err
}

// effectSQLExec is the exec of --effect-sql statements: pgTypedExec on
// PostgreSQL, exec itself on SQLite (which has no parameter types).
func effectSQLExec[TTx any](exec clikit.TxExecFunc[TTx]) clikit.TxExecFunc[TTx] {
	if typed, ok := any(clikit.TxExecFunc[pgx.Tx](pgTypedExec)).(clikit.TxExecFunc[TTx]); ok {
		return typed
	}
	return exec
}

// statements is a repeatable string flag.
type statements []string

func (s *statements) String() string { return strings.Join(*s, "; ") }

// Set adds one statement.
func (s *statements) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("empty statement")
	}
	*s = append(*s, v)
	return nil
}

func validateEffect(mode string, stmts []string) error {
	switch mode {
	case effectNone, effectOutbox:
		if len(stmts) > 0 {
			return fmt.Errorf("--effect-sql needs --effect sql (it is %s)", mode)
		}
	case EffectSQL:
		if len(stmts) == 0 {
			return fmt.Errorf("--effect sql needs at least one --effect-sql statement (parameters: %s)", sqlParams)
		}
	default:
		return fmt.Errorf("--effect %q: use none, outbox or sql", mode)
	}
	return nil
}

// checkStatements prepares each statement once at start, so that a typo
// fails serve now rather than every message later.
func checkStatements(ctx context.Context, db *clikit.InboxDB, stmts []string) error {
	if setBased(stmts) {
		if !effectJoinable(ctx, db) {
			return fmt.Errorf("--effect-sql statements that read new_messages need PostgreSQL with an unpartitioned inbox (%s)", db.Where)
		}
		if err := db.PG.CheckEffect(ctx, stmts); err != nil {
			return fmt.Errorf("--effect-sql: %w", err)
		}
		return nil
	}
	for i, s := range stmts {
		var err error
		if db.PG != nil {
			c, cerr := db.PG.Pool().Acquire(ctx)
			if cerr != nil {
				return cerr
			}
			_, err = c.Conn().PgConn().Prepare(ctx, "", s, sqlParamOIDs[:paramsUsed(s)])
			c.Release()
		} else {
			st, perr := db.Lite.DB().PrepareContext(ctx, s)
			if perr == nil {
				st.Close()
			}
			err = perr
		}
		if err != nil {
			return fmt.Errorf("--effect-sql statement %d: %w", i+1, err)
		}
	}
	return nil
}

// serveDeliver returns the configured effect, run in the inbox transaction
// after the AS4 tables are written.
func serveDeliver[TTx any](mode string, stmts []string, outbox string, exec clikit.TxExecFunc[TTx]) as4.DeliverFunc[TTx] {
	switch mode {
	case effectOutbox:
		q := `INSERT INTO ` + outbox + ` (scope, message_id, part, source, content_type, payload) VALUES ($1, $2, $3, $4, $5, $6)`
		return func(ctx context.Context, tx TTx, m *as4.Received) error {
			for i, p := range m.Parts {
				if err := exec(ctx, tx, q, m.Scope, m.Key, i, firstParty(m.UserMessage.From.IDs), p.MimeType(), p.Data); err != nil {
					return err
				}
			}
			return nil
		}
	case EffectSQL:
		exec := effectSQLExec(exec)
		used := make([]int, len(stmts))
		for i, s := range stmts {
			used[i] = paramsUsed(s)
		}
		return func(ctx context.Context, tx TTx, m *as4.Received) error {
			var payload []byte
			if len(m.Parts) > 0 {
				payload = m.Parts[0].Data
			}
			u := m.UserMessage
			args := []any{m.Scope, m.Key, u.MessageID, firstParty(u.From.IDs), firstParty(u.To.IDs),
				u.Service.Value, u.Action, u.ConversationID, payload, m.ReceivedAt}
			for i, s := range stmts {
				// Bound as parameters, never spliced into the text; each
				// statement gets as many as it names.
				if err := exec(ctx, tx, s, args[:used[i]]...); err != nil {
					return fmt.Errorf("--effect-sql statement %d: %w", i+1, err)
				}
			}
			return nil
		}
	}
	return nil
}

// sourceHandler returns the configured effect for the messages of a broker
// source (name is "kafka", "amqp", "sqs" or "nats"): the same modes as
// for AS4, with the parameters of sqlParams' "brokers" part, which keep
// $1, $2, $9 and $10 where AS4 has them and text in between, so that one
// statement can serve every source. outboxHeaders says whether the outbox
// table has a headers column.
func sourceHandler[TTx any](mode string, stmts []string, outbox string, outboxHeaders bool, exec clikit.TxExecFunc[TTx],
	name string) txinbox.HandlerFunc[TTx] {
	switch mode {
	case effectOutbox:
		q := `INSERT INTO ` + outbox + ` (scope, message_id, part, source, content_type, payload) VALUES ($1, $2, 0, $3, $4, $5)`
		if outboxHeaders {
			q = `INSERT INTO ` + outbox + ` (scope, message_id, part, source, content_type, payload, headers) VALUES ($1, $2, 0, $3, $4, $5, $6)`
		}
		return func(ctx context.Context, tx TTx, m *txinbox.Message) error {
			args := []any{m.Scope, m.ID, name, contentType(m), m.Payload}
			if outboxHeaders {
				h, err := outboxHeadersJSON(m)
				if err != nil {
					return err
				}
				args = append(args, sql.Null[string]{V: h, Valid: h != ""})
			}
			return exec(ctx, tx, q, args...)
		}
	case EffectSQL:
		exec := effectSQLExec(exec)
		used := make([]int, len(stmts))
		for i, s := range stmts {
			used[i] = paramsUsed(s)
		}
		return func(ctx context.Context, tx TTx, m *txinbox.Message) error {
			h, err := headersJSON(m)
			if err != nil {
				return err
			}
			args := []any{m.Scope, m.ID, m.ID, name, m.Source, m.PartitionKey, m.SourcePosition, h, m.Payload, m.ReceivedAt}
			for i, s := range stmts {
				if err := exec(ctx, tx, s, args[:used[i]]...); err != nil {
					return fmt.Errorf("--effect-sql statement %d: %w", i+1, err)
				}
			}
			return nil
		}
	}
	// effect none: the inbox row is the whole effect.
	return func(context.Context, TTx, *txinbox.Message) error { return nil }
}

// contentType is a message's content-type header, whatever its case.
func contentType(m *txinbox.Message) string {
	for _, h := range m.Headers {
		if strings.EqualFold(h.Key, "content-type") || strings.EqualFold(h.Key, "content_type") {
			return h.Value
		}
	}
	return ""
}

// headersJSON is a message's headers in the outbox's headers form
// (outbox.EncodeHeaders): a JSON array of {key, value}, in order, a value
// that JSON cannot carry as it is base64-encoded in value_base64. A key
// no column can hold fails the message for good.
func headersJSON(m *txinbox.Message) (string, error) {
	s, err := outbox.EncodeHeaders(m.Headers)
	if err != nil {
		return "", txinbox.Permanent(err)
	}
	return s, nil
}

// outboxHeadersJSON is headersJSON for the outbox's headers column: ""
// for a message without headers, stored as NULL (which the relay reads as
// no headers) rather than "[]" encoded and parsed again per row.
func outboxHeadersJSON(m *txinbox.Message) (string, error) {
	if len(m.Headers) == 0 {
		return "", nil
	}
	return headersJSON(m)
}

var paramRE = regexp.MustCompile(`\$([0-9]+)`)

// paramsUsed is the highest $N a statement names (at most 10).
func paramsUsed(s string) int {
	n := 0
	for _, m := range paramRE.FindAllStringSubmatch(s, -1) {
		v, _ := strconv.Atoi(m[1])
		n = max(n, min(v, 10))
	}
	return n
}

func firstParty(ids []ebms.PartyID) string {
	if len(ids) == 0 {
		return ""
	}
	return ids[0].ID
}

// outboxHasHeaders reports whether the outbox table has a headers column
// (added by a later migration), which the outbox effect then fills.
func outboxHasHeaders(ctx context.Context, db *clikit.InboxDB) bool {
	return db.Exec(ctx, `SELECT headers FROM `+db.OutboxTable()+` WHERE 1 = 0`) == nil
}

// Reset empties the list (the environment replaces the file's statements).
func (s *statements) Reset() { *s = nil }

// setBased reports whether every --effect-sql statement is set-based: it
// reads the batch's new messages from new_messages (pgstore.EffectSQL)
// and names no $N parameter.
func setBased(stmts []string) bool {
	for _, s := range stmts {
		if paramsUsed(s) > 0 || !strings.Contains(s, "new_messages") {
			return false
		}
	}
	return len(stmts) > 0
}

// contentTypeSQL is contentType over new_messages.headers.
const contentTypeSQL = `coalesce((SELECT h->>'value' FROM jsonb_array_elements(headers) h
    WHERE lower(h->>'key') IN ('content-type', 'content_type') LIMIT 1), '')`

// effectJoinable reports whether the inbox can run an effect in the
// claim's statement: PostgreSQL, not partitioned.
func effectJoinable(ctx context.Context, db *clikit.InboxDB) bool {
	if db.PG == nil {
		return false
	}
	partitioned, err := db.PG.Partitioned(ctx)
	return err == nil && !partitioned
}

// WithSourceEffect gives cfg the configured effect of a broker source:
// joined to the claim's statement (txinbox.Config.Effect: one round trip
// per batch) when join (effectJoinable) for --effect outbox and for
// set-based --effect-sql statements, else a handler per message
// (sourceHandler).
func WithSourceEffect[TTx any](cfg txinbox.Config[TTx], mode string, stmts []string, outbox string, outboxHeaders, join bool,
	exec clikit.TxExecFunc[TTx], name string) txinbox.Config[TTx] {
	_, pg := any(cfg).(txinbox.Config[pgx.Tx])
	join = join && pg
	headers := func(m *txinbox.Message) (string, error) { return headersJSON(m) }
	switch {
	case join && mode == EffectSQL && setBased(stmts):
		cfg.Effect = &txinbox.Effect{Statements: stmts, Headers: headers}
	case join && mode == effectOutbox:
		cols, vals := "scope, message_id, part, source, content_type, payload", "scope, message_id, 0, '"+name+"', "+contentTypeSQL+", payload"
		if outboxHeaders {
			cols, vals = cols+", headers", vals+", headers"
		}
		// No headers: "" makes new_messages.headers NULL (Effect.Headers).
		cfg.Effect = &txinbox.Effect{Statements: []string{"INSERT INTO " + outbox + " (" + cols + ") SELECT " + vals + " FROM new_messages"},
			Headers: outboxHeadersJSON}
	default:
		cfg.Handler = sourceHandler(mode, stmts, outbox, outboxHeaders, exec, name)
	}
	return cfg
}
