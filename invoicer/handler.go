package invoicer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/edi/edifact"
	"github.com/txinbox/txinbox/outbox"
)

// DefaultScope is the inbox scope (consumer group) of the invoicer, and
// the Scope of its outbox rows.
const DefaultScope = "edi-invoicer"

// Config configures the invoicer's inbox handler.
type Config struct {
	// Scope is the Scope of the outbox rows: use the processor's scope, so
	// that the rows' stable ids name the inbox message that made them.
	// Defaults to DefaultScope.
	Scope string
	// Sender is the UNB sender (S002) and the NAD+SU party of every
	// INVOIC: us. Sender.ID is required.
	Sender edifact.Party
	// Partners maps an event's partner name to the UNB recipient (S003)
	// and NAD+BY party. An event for a partner not in the map is
	// dead-lettered (txinbox.Permanent). Required, not empty.
	Partners map[string]edifact.Party
}

func (c Config) withDefaults() Config {
	if c.Scope == "" {
		c.Scope = DefaultScope
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Sender.ID == "":
		return errors.New("invoicer: Config.Sender.ID is required (the UNB sender identification)")
	case len(c.Partners) == 0:
		return errors.New("invoicer: Config.Partners is required: partner name -> UNB recipient")
	}
	for name, p := range c.Partners {
		if name == "" || p.ID == "" {
			return fmt.Errorf("invoicer: Config.Partners[%q]: the name and the recipient ID are required", name)
		}
	}
	return nil
}

// Adder adds an outbox row in the handler's transaction: *outboxpg.Store for
// pgx.Tx, *outboxlite.Store for *sql.Tx.
type Adder[TTx any] interface {
	Add(ctx context.Context, tx TTx, e outbox.Entry) error
}

// dialect is what differs between the databases.
type dialect[TTx any] struct {
	// nextRef draws the next interchange control reference in tx.
	nextRef func(ctx context.Context, tx TTx) (int64, error)
	exec    func(ctx context.Context, tx TTx, sql string, args ...any) error
}

// PostgreSQL returns the inbox handler for a pgstore processor. The control
// reference comes from the SEQUENCE invoicer_unb_ref_seq: a rolled-back
// transaction leaves a gap (sequences are not transactional), never a
// reference used twice. Run MigratePostgreSQL first.
func PostgreSQL(ob Adder[pgx.Tx], cfg Config) (txinbox.HandlerFunc[pgx.Tx], error) {
	return newHandler(ob, cfg, dialect[pgx.Tx]{
		nextRef: func(ctx context.Context, tx pgx.Tx) (int64, error) {
			var n int64
			err := tx.QueryRow(ctx, `SELECT nextval('invoicer_unb_ref_seq')`).Scan(&n)
			return n, err
		},
		exec: func(ctx context.Context, tx pgx.Tx, q string, args ...any) error {
			_, err := tx.Exec(ctx, q, args...)
			return err
		},
	})
}

// SQLite returns the inbox handler for a sqlitestore processor. The control
// reference comes from the counter row invoicer_counters('unb_ref'),
// incremented in the inbox transaction: the SQLite write lock serialises
// the transactions, and a rollback takes the increment back with it. Run
// MigrateSQLite first.
func SQLite(ob Adder[*sql.Tx], cfg Config) (txinbox.HandlerFunc[*sql.Tx], error) {
	return newHandler(ob, cfg, dialect[*sql.Tx]{
		nextRef: func(ctx context.Context, tx *sql.Tx) (int64, error) {
			var n int64
			err := tx.QueryRowContext(ctx, `UPDATE invoicer_counters SET value = value + 1 WHERE name = 'unb_ref' RETURNING value`).Scan(&n)
			if errors.Is(err, sql.ErrNoRows) {
				err = errors.New("invoicer: the invoicer_counters row 'unb_ref' is missing (run MigrateSQLite)")
			}
			return n, err
		},
		exec: func(ctx context.Context, tx *sql.Tx, q string, args ...any) error {
			_, err := tx.ExecContext(ctx, q, args...)
			return err
		},
	})
}

func newHandler[TTx any](ob Adder[TTx], cfg Config, d dialect[TTx]) (txinbox.HandlerFunc[TTx], error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if ob == nil {
		return nil, errors.New("invoicer: the outbox (Adder) is required")
	}
	return func(ctx context.Context, tx TTx, m *txinbox.Message) error {
		ev, err := ParseEvent(m.Payload)
		if err != nil {
			return txinbox.Permanent(err)
		}
		recipient, ok := cfg.Partners[ev.Partner]
		if !ok {
			return txinbox.Permanent(fmt.Errorf("invoice %s: unknown partner %q", ev.InvoiceID, ev.Partner))
		}
		n, err := d.nextRef(ctx, tx)
		if err != nil {
			return fmt.Errorf("invoicer: drawing the UNB control reference: %w", err)
		}
		ref := strconv.FormatInt(n, 10)
		invoic, err := BuildINVOIC(ev, ref, cfg.Sender, recipient)
		if err != nil {
			return txinbox.Permanent(err)
		}
		if err := d.exec(ctx, tx, `INSERT INTO partner_invoices (message_id, invoice_no, partner, amount_cents, run_id, unb_ref)
			VALUES ($1, $2, $3, $4, $5, $6)`, m.ID, ev.InvoiceID, ev.Partner, ev.TotalCents(), ev.Run, ref); err != nil {
			return fmt.Errorf("invoicer: inserting partner_invoices: %w", err)
		}
		return ob.Add(ctx, tx, outbox.Entry{
			Scope: cfg.Scope, MessageID: m.ID, Source: "invoicer", Topic: ev.Partner, Key: ev.Partner,
			ContentType: ContentType, Payload: invoic,
			Headers: []outbox.Header{{Key: "invoice-id", Value: ev.InvoiceID}, {Key: "unb-ref", Value: ref}},
		})
	}, nil
}

// partnerInvoicesColumns are the columns of partner_invoices. The table has
// deliberately no unique constraint: only the inbox stands between a
// redelivered event and a second invoice, and the demo counts the rows.
// (message_id, invoice_no, partner, amount_cents, run_id) are shared with
// the plain demo's table of the same name, so both can use one database.
const partnerInvoicesColumns = `message_id text NOT NULL, invoice_no text NOT NULL,
	partner text NOT NULL, amount_cents bigint NOT NULL, run_id text NOT NULL DEFAULT '', unb_ref text`

// MigratePostgreSQL creates partner_invoices and the control reference
// sequence in the connection's search_path, if missing. Safe to run twice.
func MigratePostgreSQL(ctx context.Context, pool *pgxpool.Pool) error {
	for _, s := range []string{
		`CREATE TABLE IF NOT EXISTS partner_invoices (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, ` +
			partnerInvoicesColumns + `, created_at timestamptz NOT NULL DEFAULT now())`,
		`ALTER TABLE partner_invoices ADD COLUMN IF NOT EXISTS unb_ref text`,
		`CREATE SEQUENCE IF NOT EXISTS invoicer_unb_ref_seq`,
	} {
		if _, err := pool.Exec(ctx, s); err != nil {
			return fmt.Errorf("invoicer: migrating: %w", err)
		}
	}
	return nil
}

// MigrateSQLite creates partner_invoices and the control reference counter
// row, if missing. Safe to run twice.
func MigrateSQLite(ctx context.Context, db *sql.DB) error {
	for _, s := range []string{
		`CREATE TABLE IF NOT EXISTS partner_invoices (id INTEGER PRIMARY KEY AUTOINCREMENT, ` +
			partnerInvoicesColumns + `, created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)`,
		`CREATE TABLE IF NOT EXISTS invoicer_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)`,
		`INSERT INTO invoicer_counters (name, value) VALUES ('unb_ref', 0) ON CONFLICT (name) DO NOTHING`,
	} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("invoicer: migrating: %w", err)
		}
	}
	// A partner_invoices table of the plain demo lacks unb_ref.
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('partner_invoices') WHERE name = 'unb_ref'`).Scan(&n); err != nil {
		return fmt.Errorf("invoicer: migrating: %w", err)
	}
	if n == 0 {
		if _, err := db.ExecContext(ctx, `ALTER TABLE partner_invoices ADD COLUMN unb_ref text`); err != nil {
			return fmt.Errorf("invoicer: migrating: %w", err)
		}
	}
	return nil
}
