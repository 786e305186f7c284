package effect

import (
	"context"
	"fmt"

	"github.com/txinbox/txinbox"
)

// Handler returns the effect for the messages of a source (see Apply),
// run per message in the message's transaction: the outbox row (part 0,
// its content type from the content-type header), or each statement of
// SQL with the brokers' parameters of Params. With None it does nothing.
func (e *Effect[TTx]) Handler(source string) txinbox.HandlerFunc[TTx] {
	switch e.spec.Mode {
	case Outbox:
		q := `INSERT INTO ` + e.spec.OutboxTable + ` (scope, message_id, part, source, content_type, payload) VALUES ($1, $2, 0, $3, $4, $5)`
		if e.spec.OutboxHeaders {
			q = `INSERT INTO ` + e.spec.OutboxTable + ` (scope, message_id, part, source, content_type, payload, headers) VALUES ($1, $2, 0, $3, $4, $5, $6)`
		}
		return func(ctx context.Context, tx TTx, m *txinbox.Message) error {
			args := []any{m.Scope, m.ID, source, contentType(m), m.Payload}
			if e.spec.OutboxHeaders {
				h, err := outboxHeadersJSON(m)
				if err != nil {
					return err
				}
				args = append(args, nullable(h))
			}
			return e.exec(ctx, tx, q, args...)
		}
	case SQL:
		return func(ctx context.Context, tx TTx, m *txinbox.Message) error {
			h, err := headersJSON(m)
			if err != nil {
				return err
			}
			return e.runStatements(ctx, tx, &[MaxParams]any{m.Scope, m.ID, m.ID, source, m.Source, m.PartitionKey, m.SourcePosition, h, m.Payload, m.ReceivedAt})
		}
	}
	// None: the inbox row is the whole effect.
	return func(context.Context, TTx, *txinbox.Message) error { return nil }
}

// nullable is s, or nil (NULL) for "".
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Message is a message of another kind than txinbox.Message (an AS4 user
// message: as4/as4effect) as Run sees it.
type Message struct {
	// Scope and Key are the message's inbox key: its outbox rows' scope
	// and message_id.
	Scope, Key string
	// Source is its outbox rows' source column (AS4: the From PartyId).
	Source string
	// Parts are its payloads: an outbox row each, numbered from 0.
	Parts []Part
	// Params are the values of $1 to $10 of SQL's statements, of the types
	// Params documents (string, []byte or nil, time.Time).
	Params [MaxParams]any
}

// Part is one payload of a Message.
type Part struct {
	ContentType string
	Payload     []byte
}

// Run runs the effect for m in tx, after its inbox row was claimed: an
// outbox row per part, or each statement of SQL with m.Params (which
// must then be per-message statements: new_messages exists only in the
// claim's statement). With None it does nothing.
func (e *Effect[TTx]) Run(ctx context.Context, tx TTx, m *Message) error {
	switch e.spec.Mode {
	case Outbox:
		q := `INSERT INTO ` + e.spec.OutboxTable + ` (scope, message_id, part, source, content_type, payload) VALUES ($1, $2, $3, $4, $5, $6)`
		for i, p := range m.Parts {
			if err := e.exec(ctx, tx, q, m.Scope, m.Key, i, m.Source, p.ContentType, p.Payload); err != nil {
				return err
			}
		}
	case SQL:
		return e.runStatements(ctx, tx, &m.Params)
	}
	return nil
}

// runStatements runs each statement with as many of args as it names:
// bound as parameters, never spliced into the text.
func (e *Effect[TTx]) runStatements(ctx context.Context, tx TTx, args *[MaxParams]any) error {
	for i, s := range e.spec.Statements {
		if err := e.exec(ctx, tx, s, args[:e.used[i]]...); err != nil {
			return fmt.Errorf("--effect-sql statement %d: %w", i+1, err)
		}
	}
	return nil
}
