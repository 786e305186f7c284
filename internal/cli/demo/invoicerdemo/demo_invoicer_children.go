package invoicerdemo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4client"
	"github.com/txinbox/txinbox/as4/as4pg"
	"github.com/txinbox/txinbox/as4/as4sqlite"
	"github.com/txinbox/txinbox/edi"
	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/edi/edifact"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/internal/cli/demo"
	"github.com/txinbox/txinbox/invoicer"
	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/outbox/outboxlite"
	"github.com/txinbox/txinbox/outbox/outboxpg"
	as4target "github.com/txinbox/txinbox/outbox/target/as4"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/store"
)

// The three child processes of `txinbox demo --scenario invoicer`, each a
// hidden command the parent starts, SIGKILLs and restarts:
//
//   - demo-invoicer-consumer: Kafka source -> inbox -> INVOIC,
//     partner_invoices row and outbox row, in one transaction;
//   - demo-invoicer-relay: outbox -> AS4 target -> the partner;
//   - demo-invoicer-partner: the partner's AS4 endpoint with its own inbox;
//     its effect is a received_invoic row (ebMS MessageId, UNB control
//     reference read from the payload by txinbox's EDIFACT key
//     extraction), and it records every AS4 resend its inbox recognised.
//
// Each runs until its stdin closes (the parent asks it to leave) or it is
// killed.

// The demo's trading partners: name (the event's partner, the outbox
// row's Topic) and GLN (the UNB recipient).
var invoicerPartners = map[string]edifact.Party{
	"ACME":    {ID: "5790000000011", Qualifier: "14"},
	"GLOBEX":  {ID: "5790000000028", Qualifier: "14"},
	"INITECH": {ID: "5790000000035", Qualifier: "14"},
}

var invoicerSender = edifact.Party{ID: "5790000000004", Qualifier: "14"}

const (
	invoicerMessageIDDomain = "invoicer.txinbox.demo"
	invoicerPartyType       = "urn:oasis:names:tc:ebcore:partyid-type:unregistered"
	invoicerKafkaHeader     = "message-id"
	invoicerPartnerScope    = "as4-from-invoicer"
)

// untilStdinCloses returns a context cancelled when stdin closes.
func untilStdinCloses(ctx context.Context, env *clikit.Env) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		io.Copy(io.Discard, env.Stdin) //nolint:errcheck // EOF or error: leave either way
		cancel()
	}()
	return ctx, cancel
}

// childMain parses a child's flags, opens its database and runs it.
func childMain(ctx context.Context, env *clikit.Env, name string, args []string, extra func(fs *flag.FlagSet),
	run func(ctx context.Context, db *clikit.InboxDB, dbf clikit.DBFlags) error) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var dbf clikit.DBFlags
	dbf.Register(fs, env)
	extra(fs)
	if err := fs.Parse(args); err != nil {
		return clikit.ExitUsage
	}
	db, err := clikit.OpenDB(ctx, dbf, 4)
	if err != nil {
		fmt.Fprintln(env.Stderr, name+":", err)
		return clikit.ExitFailure
	}
	defer db.Close()
	ctx, cancel := untilStdinCloses(ctx, env)
	defer cancel()
	if err := run(ctx, db, dbf); err != nil && ctx.Err() == nil {
		fmt.Fprintln(env.Stderr, name+":", err)
		return clikit.ExitFailure
	}
	return clikit.ExitOK
}

// RunConsumer is the hidden child command demo-invoicer-consumer: Kafka
// -> inbox -> INVOIC, partner_invoices row and outbox row.
func RunConsumer(ctx context.Context, env *clikit.Env, args []string) int {
	var seeds, topic string
	var session time.Duration
	return childMain(ctx, env, "demo-invoicer-consumer", args, func(fs *flag.FlagSet) {
		fs.StringVar(&seeds, "seeds", "", "a Kafka broker")
		fs.DurationVar(&session, "session-timeout", demo.KafkaSession, "the group session timeout")
		fs.StringVar(&topic, "topic", "", "the topic of the InvoiceIssued events")
	}, func(ctx context.Context, db *clikit.InboxDB, _ clikit.DBFlags) error {
		cfg := invoicer.Config{Scope: invoicer.DefaultScope, Sender: invoicerSender, Partners: invoicerPartners}
		if db.PG != nil {
			h, err := invoicer.PostgreSQL(outboxpg.New(db.PG), cfg)
			if err != nil {
				return err
			}
			return consumeInvoices(ctx, db.PG, h, seeds, topic, session)
		}
		h, err := invoicer.SQLite(outboxlite.New(db.Lite), cfg)
		if err != nil {
			return err
		}
		return consumeInvoices(ctx, db.Lite, h, seeds, topic, session)
	})
}

func consumeInvoices[TTx any](ctx context.Context, d store.Driver[TTx], h txinbox.HandlerFunc[TTx], seeds, topic string, session time.Duration) error {
	proc, err := txinbox.NewProcessor(d, txinbox.Config[TTx]{Scope: invoicer.DefaultScope, Handler: h, MaxBatchSize: 8,
		Ordered: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	c, err := kafka.New(proc, kafka.Config{
		Seeds: []string{seeds}, Topics: []string{topic}, Group: invoicer.DefaultScope,
		Key: kafka.HeaderKey(invoicerKafkaHeader),
		// Small polls and batches: the work is spread over time, so a
		// SIGKILL lands in the middle of it.
		MaxPollRecords: 16, Concurrency: 2,
		ClientOptions: []kgo.Opt{kgo.SessionTimeout(session), kgo.HeartbeatInterval(session / 10),
			kgo.RebalanceTimeout(session * 2 / 3), kgo.FetchMaxWait(100 * time.Millisecond)},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

// RunRelay is the hidden child command demo-invoicer-relay: the outbox
// relayed over AS4 to the partner.
func RunRelay(ctx context.Context, env *clikit.Env, args []string) int {
	var partnerURL, sabotage, keys string
	return childMain(ctx, env, "demo-invoicer-relay", args, func(fs *flag.FlagSet) {
		fs.StringVar(&partnerURL, "partner-url", "", "the partner's AS4 endpoint")
		fs.StringVar(&keys, "keys", "", "directory of the demo's PEM keys and certificates")
		fs.StringVar(&sabotage, "sabotage", "", "break the relay on purpose: "+sabotageFreshMessageID+" or "+sabotageLostReceipts)
	}, func(ctx context.Context, db *clikit.InboxDB, _ clikit.DBFlags) error {
		sec, err := senderSecurity(keys)
		if err != nil {
			return err
		}
		as4t, err := invoicerTarget(partnerURL, sec)
		if err != nil {
			return err
		}
		var target outbox.Target = as4t
		switch sabotage {
		case "":
		case sabotageFreshMessageID, sabotageLostReceipts:
			target = &sabotagedTarget{next: as4t, freshIDs: sabotage == sabotageFreshMessageID}
		default:
			return fmt.Errorf("--sabotage %q: the relay knows %s and %s", sabotage, sabotageFreshMessageID, sabotageLostReceipts)
		}
		var st outbox.Store
		if db.PG != nil {
			st = outboxpg.New(db.PG)
		} else {
			st = outboxlite.New(db.Lite)
		}
		r, err := outbox.New(st, outbox.Config{
			Target: target, BatchSize: 4, Concurrency: 2, MaxAttempts: 1000,
			// A partner being restarted answers again within a second.
			Backoff:      func(attempt int) time.Duration { return time.Duration(min(attempt, 10)) * 100 * time.Millisecond },
			PollInterval: 50 * time.Millisecond, SendTimeout: 2 * time.Second, LeaseDuration: 3 * time.Second,
			Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			return err
		}
		return r.Run(ctx)
	})
}

// The invoicer demo's sabotage modes (demo --scenario invoicer --sabotage,
// docs/invoicer.md): each breaks one of the two things that keep an INVOIC
// from arriving twice, so that the checker can be seen to fail, or (the
// control) only forces the resends, which must then all be recognised.
const (
	// sabotageFreshMessageID: the relay gives every send a fresh ebMS
	// MessageId and loses every row's first receipt: each resend is a new
	// message to the partner.
	sabotageFreshMessageID = "fresh-message-id"
	// sabotageLostReceipts: the relay loses every row's first receipt and
	// sends again with the same derived MessageId (the control: all pass).
	sabotageLostReceipts = "lost-receipts"
	// sabotagePartnerWithoutInbox: the relay loses every row's first
	// receipt, and the partner runs its effect again for a MessageId its
	// inbox already has.
	sabotagePartnerWithoutInbox = "partner-without-inbox"
)

// sabotagedTarget wraps the AS4 target: it treats the first receipt the
// partner returns for a row as lost (a retryable error after a successful
// send, as a dropped connection would), so that every row is sent at
// least twice whether or not a crash lands in the right window. "First"
// is per relay process (a restarted relay loses one more; a send that
// failed, say while the partner restarted, does not count); with
// freshIDs it also makes every send a new AS4 message, its MessageId
// derived from a random id instead of the row's stable id. The
// ConversationId stays the row's MessageID (the event id), so the partner
// side can still tell which invoice a delivery belongs to.
type sabotagedTarget struct {
	next     outbox.Target
	freshIDs bool
	lost     sync.Map // outbox row id -> struct{}: its receipt was dropped
}

// Send sends m (under a fresh MessageId with freshIDs) and loses the
// receipt of the row's first attempt.
func (s *sabotagedTarget) Send(ctx context.Context, m *outbox.Message) (outbox.Receipt, error) {
	send := m
	if s.freshIDs {
		c := *m
		if m.HeaderValue(as4target.HeaderConversationID) == "" {
			c.Headers = append(slices.Clip(m.Headers), outbox.Header{Key: as4target.HeaderConversationID, Value: m.MessageID})
		}
		c.MessageID = fmt.Sprintf("%s/sabotage-%016x", m.MessageID, rand.Uint64())
		send = &c
	}
	rcpt, err := s.next.Send(ctx, send)
	if err != nil {
		return rcpt, err
	}
	if _, dropped := s.lost.LoadOrStore(m.ID, struct{}{}); dropped {
		return rcpt, nil
	}
	return nil, fmt.Errorf("demo sabotage: the partner's first receipt for outbox row %d (%s, attempt %d) is treated as lost", m.ID, m.StableID(), m.Attempt)
}

// invoicerTarget is the AS4 target: every partner is served by the demo's
// one partner endpoint, each under its own PartyId.
func invoicerTarget(url string, sec as4client.Security) (*as4target.Target, error) {
	partners := map[string]as4target.Partner{}
	for name := range invoicerPartners {
		partners[name] = as4target.Partner{URL: url,
			From:    ebms.Party{IDs: []ebms.PartyID{{Type: invoicerPartyType, ID: "txinbox-invoicer"}}},
			To:      ebms.Party{IDs: []ebms.PartyID{{Type: invoicerPartyType, ID: name}}},
			Service: "urn:txinbox:demo:invoicing", Action: "INVOIC", Security: sec}
	}
	return as4target.New(as4target.Config{Partners: partners, MessageIDDomain: invoicerMessageIDDomain, Timeout: 2 * time.Second})
}

// RunPartner is the hidden child command demo-invoicer-partner: the
// partner's AS4 endpoint with its own inbox.
func RunPartner(ctx context.Context, env *clikit.Env, args []string) int {
	var listen, sabotage, keys string
	return childMain(ctx, env, "demo-invoicer-partner", args, func(fs *flag.FlagSet) {
		fs.StringVar(&listen, "listen", "", "address of the partner's AS4 endpoint")
		fs.StringVar(&keys, "keys", "", "directory of the demo's PEM keys and certificates")
		fs.StringVar(&sabotage, "sabotage", "", "break the partner on purpose: "+sabotagePartnerWithoutInbox)
	}, func(ctx context.Context, db *clikit.InboxDB, dbf clikit.DBFlags) error {
		if sabotage != "" && sabotage != sabotagePartnerWithoutInbox {
			return fmt.Errorf("--sabotage %q: the partner knows %s", sabotage, sabotagePartnerWithoutInbox)
		}
		sec, err := partnerSecurity(keys)
		if err != nil {
			return err
		}
		t := partnerTablesFor(db, dbf.Schema)
		t.withoutInbox = sabotage == sabotagePartnerWithoutInbox
		if db.PG != nil {
			st, err := as4pg.New(db.PG.Pool(), as4pg.Options{Schema: dbf.Schema, TablePrefix: dbf.Prefix})
			if err != nil {
				return err
			}
			return servePartner(ctx, listen, db, db.PG, st, clikit.PGTxExec, t, sec)
		}
		st, err := as4sqlite.New(db.Lite.DB(), as4sqlite.Options{TablePrefix: dbf.Prefix})
		if err != nil {
			return err
		}
		return servePartner(ctx, listen, db, db.Lite, st, clikit.SQLTxExec, t, sec)
	})
}

// servePartner runs the partner's AS4 endpoint until ctx is done.
func servePartner[TTx any](ctx context.Context, listen string, db *clikit.InboxDB, d store.Driver[TTx], st as4.Store[TTx],
	exec clikit.TxExecFunc[TTx], t partnerTables, sec as4.SecurityConfig) error {
	h, err := as4.New(d, as4.Config[TTx]{
		Store: st, Security: sec,
		Inbox: txinbox.Config[TTx]{Scope: invoicerPartnerScope, Logger: slog.New(slog.DiscardHandler),
			Hooks: []txinbox.Hook{&partnerDuplicates{db: db, t: t}}},
		Deliver: func(ctx context.Context, tx TTx, m *as4.Received) error {
			if len(m.Parts) != 1 {
				return txinbox.Permanent(fmt.Errorf("want one payload, got %d", len(m.Parts)))
			}
			// The partner knows the interchange by its UNB: txinbox's own
			// EDIFACT key extraction reads it (and checks the envelope).
			ics, err := edifact.Parse(bytes.NewReader(m.Parts[0].Data))
			if err != nil || len(ics) != 1 {
				return txinbox.Permanent(fmt.Errorf("payload is not one EDIFACT interchange: %v", err))
			}
			return exec(ctx, tx, `INSERT INTO `+t.received+` (message_id, conversation_id, unb_ref) VALUES ($1, $2, $3)`,
				m.UserMessage.MessageID, m.UserMessage.ConversationID, ics[0].ControlRef)
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	defer h.Close()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/as4", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// partnerDuplicates records, for every AS4 message the partner's inbox
// recognised as already received, a row with its ebMS MessageId. The hook
// runs after the inbox's batch committed and before the endpoint answers
// (Submit returns after the hooks), so every duplicate whose receipt
// reached the relay is counted; a crash between the row and the answer
// may count one whose answer was lost.
//
// Under the partner-without-inbox sabotage it instead runs the partner's
// effect again: a copy of the MessageId's received_invoic row, as a
// receiver that does not deduplicate would.
type partnerDuplicates struct {
	db *clikit.InboxDB
	t  partnerTables
}

// OnOutcome records a Duplicate.
func (p *partnerDuplicates) OnOutcome(ctx context.Context, m *txinbox.Message, res txinbox.Result) {
	if res.Outcome != txinbox.Duplicate {
		return
	}
	_, vals, err := edi.DecodeID(m.ID) // as4:party|type|MessageId
	if err != nil || len(vals) != 3 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if p.t.withoutInbox {
		p.db.Exec(ctx, `INSERT INTO `+p.t.received+` (message_id, conversation_id, unb_ref) SELECT message_id, conversation_id, unb_ref FROM `+ //nolint:errcheck // sabotage
			p.t.received+` WHERE id = (SELECT min(id) FROM `+p.t.received+` WHERE message_id = $1)`, vals[2])
		return
	}
	// Best effort: the demo's count, not the business record.
	p.db.Exec(ctx, `INSERT INTO `+p.t.duplicates+` (message_id) VALUES ($1)`, vals[2]) //nolint:errcheck // see above
}

// partnerTables are the partner's own tables, next to its inbox.
type partnerTables struct {
	received   string // received_invoic: one row per delivery the partner's handler ran
	duplicates string // partner_as4_duplicates: one row per resend recognised
	// withoutInbox: the partner-without-inbox sabotage (see partnerDuplicates).
	withoutInbox bool
}

func partnerTablesFor(db *clikit.InboxDB, schema string) partnerTables {
	if db.PG != nil && schema != "" {
		return partnerTables{received: pgx.Identifier{schema, "received_invoic"}.Sanitize(),
			duplicates: pgx.Identifier{schema, "partner_as4_duplicates"}.Sanitize()}
	}
	return partnerTables{received: "received_invoic", duplicates: "partner_as4_duplicates"}
}

// createPartnerTables creates the partner's tables. received_invoic has
// deliberately NO unique constraint: one row per delivery the handler ran,
// so a second delivery of one INVOIC would show.
func createPartnerTables(ctx context.Context, db *clikit.InboxDB, t partnerTables) error {
	id, ts := "id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", "timestamptz NOT NULL DEFAULT now()"
	if db.Kind == "sqlite" {
		id, ts = "id INTEGER PRIMARY KEY AUTOINCREMENT", "TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP"
	}
	for _, s := range []string{
		`CREATE TABLE IF NOT EXISTS ` + t.received + ` (` + id + `, message_id text NOT NULL, conversation_id text NOT NULL DEFAULT '', unb_ref text NOT NULL, received_at ` + ts + `)`,
		`CREATE TABLE IF NOT EXISTS ` + t.duplicates + ` (` + id + `, message_id text NOT NULL, recorded_at ` + ts + `)`,
	} {
		if err := db.Exec(ctx, s); err != nil {
			return fmt.Errorf("creating the partner's tables: %w", err)
		}
	}
	// received_invoic of an earlier version has no conversation_id: the
	// eb:ConversationId, the event id, by which the checker attributes a
	// delivery to its invoice whatever MessageId it came under.
	add := `ALTER TABLE ` + t.received + ` ADD COLUMN IF NOT EXISTS conversation_id text NOT NULL DEFAULT ''`
	if db.Kind == "sqlite" {
		var n int
		if err := db.Query(ctx, `SELECT count(*) FROM pragma_table_info('received_invoic') WHERE name = 'conversation_id'`, nil,
			[]any{&n}, func() error { return nil }); err != nil {
			return fmt.Errorf("reading the columns of received_invoic: %w", err)
		}
		if n > 0 {
			return nil
		}
		add = `ALTER TABLE ` + t.received + ` ADD COLUMN conversation_id text NOT NULL DEFAULT ''`
	}
	if err := db.Exec(ctx, add); err != nil {
		return fmt.Errorf("adding conversation_id to %s: %w", t.received, err)
	}
	return nil
}

// invoicerEvent is one planned InvoiceIssued event and its ids.
type invoicerEvent struct {
	id        string // the inbox message id, also the Kafka message-id header
	messageID string // the AS4 MessageId its INVOIC travels under
	payload   []byte
}

func newInvoicerEvent(run string, n int, partner string, lines []invoicer.Line, at time.Time) invoicerEvent {
	ev := invoicer.InvoiceIssued{Type: invoicer.EventType, InvoiceID: fmt.Sprintf("INV-%s-%06d", run, n), Partner: partner,
		IssuedAt: at, Currency: "EUR", Lines: lines, Run: run}
	b, _ := json.Marshal(ev) // plain struct
	id := fmt.Sprintf("InvoiceIssued/%s/%06d", run, n)
	stable := (&outbox.Message{Scope: invoicer.DefaultScope, MessageID: id}).StableID()
	return invoicerEvent{id: id, messageID: as4client.DeriveMessageID(stable, invoicerMessageIDDomain), payload: b}
}
