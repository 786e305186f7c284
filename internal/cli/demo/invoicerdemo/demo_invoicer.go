package invoicerdemo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox/as4/as4pg"
	"github.com/txinbox/txinbox/as4/as4sqlite"
	"github.com/txinbox/txinbox/internal/brokers"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/internal/cli/demo"
	"github.com/txinbox/txinbox/invoicer"
)

// `txinbox demo --scenario invoicer`: the seed's EDI invoicer end to end.
// The parent runs an embedded Kafka (kfake) and publishes InvoiceIssued
// events (a share of them twice, as an at-least-once producer does). Three
// child processes do the work and are SIGKILLed at random moments and
// restarted: the consumer (Kafka -> inbox -> INVOIC + partner_invoices +
// outbox row, one transaction), the relay (outbox -> AS4) and the partner
// (an AS4 endpoint with its own inbox). At the end the parent checks the
// tables itself: one INVOIC per invoice at the partner, no UNB control
// reference used twice, every outbox row sent with a receipt stored.

// invoicerSummary is the scenario's result; --json prints it.
type invoicerSummary struct {
	Scenario string `json:"scenario"`
	// Sabotage is the --sabotage mode, if any.
	Sabotage  string `json:"sabotage,omitempty"`
	DB        string `json:"db"`
	Where     string `json:"where"`
	Run       string `json:"run"`
	Invoices  int    `json:"invoices"`
	Published int    `json:"published"`
	Resent    int    `json:"resent"`
	// InvoicBuilt counts partner_invoices rows of the run: INVOICs built.
	InvoicBuilt int `json:"invoic_built"`
	// DoubleInvoices and LostInvoices compare them to the events.
	DoubleInvoices int `json:"double_invoices"`
	LostInvoices   int `json:"lost_invoices"`
	// UNBRefsReusedSender counts control references on more than one
	// partner_invoices row (the whole table).
	UNBRefsReusedSender int `json:"unb_refs_reused_sender"`
	OutboxRows          int `json:"outbox_rows"`
	OutboxSentReceipt   int `json:"outbox_sent_with_receipt"`
	// OutboxSignedReceipt counts the outbox rows whose stored receipt is
	// the partner's signed non-repudiation receipt, which the relay
	// verified against the digests it signed.
	OutboxSignedReceipt int `json:"outbox_signed_receipt"`
	// InvoicDelivered counts received_invoic rows of the run at the
	// partner: one per delivery its handler ran.
	InvoicDelivered int `json:"invoic_delivered"`
	// DeliveredTwice, NeverDelivered and WrongRef check them per invoice.
	DeliveredTwice   int `json:"delivered_twice"`
	NeverDelivered   int `json:"never_delivered"`
	WrongUNBRef      int `json:"wrong_unb_ref"`
	UNBRefsReusedPar int `json:"unb_refs_reused_partner"`
	// MessageIDsNotDerived counts received_invoic rows of the run whose
	// ebMS MessageId is not the one derived from the outbox row's stable
	// id (deliveries are attributed to invoices by the ConversationId).
	MessageIDsNotDerived int `json:"message_ids_not_derived"`
	// DuplicatesDroppedAtPartner counts AS4 resends the partner's inbox
	// recognised (rows of partner_as4_duplicates, see docs/invoicer.md).
	DuplicatesDroppedAtPartner int            `json:"duplicates_dropped_at_partner"`
	Crashes                    int            `json:"crashes"`
	CrashPoints                map[string]int `json:"crash_points"`
	ElapsedMS                  int64          `json:"elapsed_ms"`
	OK                         bool           `json:"ok"`
}

// Run runs txinbox demo --scenario invoicer with the demo's flags.
func Run(ctx context.Context, env *clikit.Env, fs *flag.FlagSet, o demo.Options) int {
	if err := validateInvoicer(&o, fs); err != nil {
		fmt.Fprintln(env.Stderr, "txinbox demo:", err)
		return clikit.ExitUsage
	}
	d := &invoicerDemo{o: o, env: env, children: map[string]*invoicerChild{}}
	if o.DB.URL == "" {
		dir, err := os.MkdirTemp("", "txinbox-invoicer-")
		if err != nil {
			fmt.Fprintln(env.Stderr, "txinbox demo:", err)
			return clikit.ExitFailure
		}
		if !o.Keep {
			defer os.RemoveAll(dir)
		}
		d.o.DB.URL = filepath.Join(dir, "sender.db")
	}
	if d.o.Seed == 0 {
		d.o.Seed = uint64(time.Now().UnixNano())
	}
	keys, err := os.MkdirTemp("", "txinbox-invoicer-keys-")
	if err == nil {
		defer os.RemoveAll(keys)
		err = writeDemoPKI(keys)
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox demo: making the WS-Security keys:", err)
		return clikit.ExitFailure
	}
	d.keys = keys
	sum, err := d.execute(ctx)
	if err != nil {
		fmt.Fprintln(env.Stderr, "txinbox demo:", err)
		return clikit.ExitFailure
	}
	if o.JSON {
		json.NewEncoder(env.Stdout).Encode(sum) //nolint:errcheck // stdout
	} else {
		printInvoicerSummary(env, sum)
	}
	if !sum.OK {
		return clikit.ExitFailure
	}
	return clikit.ExitOK
}

func validateInvoicer(o *demo.Options, fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["messages"] && !set["invoices"] {
		o.Invoicer.Invoices = o.Messages // the plain demo's name for the same count
	}
	inv := o.Invoicer
	switch {
	case inv.Scenario != "invoicer":
		return fmt.Errorf("--scenario %q: the only scenario is invoicer", inv.Scenario)
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case set["messages"] && set["invoices"] && o.Messages != inv.Invoices:
		return fmt.Errorf("--messages %d and --invoices %d: give one (they are the same count)", o.Messages, inv.Invoices)
	case set["source"] && o.Source != "kafka":
		return errors.New("--scenario invoicer runs on Kafka: --source (other than kafka) does not apply")
	case o.Sabotage != "" && !slices.Contains(invoicerSabotages, o.Sabotage):
		return fmt.Errorf("--sabotage %q with --scenario invoicer: use one of %s (%s and %s are the plain demo's)",
			o.Sabotage, strings.Join(invoicerSabotages, ", "), demo.SabotageDeliveryKey, demo.SabotageAckFirst)
	case inv.Invoices < 1:
		return fmt.Errorf("--invoices must be at least 1, got %d", inv.Invoices)
	case o.Duplicates < 0 || o.Duplicates > 1:
		return fmt.Errorf("--duplicates must be between 0 and 1, got %g", o.Duplicates)
	case o.Crashes < 0:
		return fmt.Errorf("--crashes must not be negative, got %d", o.Crashes)
	case inv.Timeout <= 0:
		return fmt.Errorf("--timeout must be positive, got %s", inv.Timeout)
	case inv.PartnerSchema == "":
		return errors.New("--partner-schema must not be empty")
	}
	return nil
}

// invoicerSabotages are the --sabotage modes of the invoicer scenario (see
// sabotagedTarget and partnerDuplicates, and docs/invoicer.md).
var invoicerSabotages = []string{sabotageFreshMessageID, sabotageLostReceipts, sabotagePartnerWithoutInbox}

// invoicerDemo is the parent's state.
type invoicerDemo struct {
	o        demo.Options
	env      *clikit.Env
	rng      *rand.Rand
	run      string
	sender   *clikit.InboxDB
	partner  *clikit.InboxDB
	senderF  clikit.DBFlags
	partnerF clikit.DBFlags
	pt       partnerTables
	events   []invoicerEvent
	byMsgID  map[string]int // derived AS4 MessageId -> event
	byID     map[string]int // event id (the eb:ConversationId) -> event
	seeds    string
	session  time.Duration // the consumers' group session timeout
	topic    string
	addr     string // the partner endpoint
	keys     string // the directory of the WS-Security keys of both sides
	children map[string]*invoicerChild
	// baselines: the partner tables' ids before the run.
	receivedBase, dupBase int64
	// progress, polled from the tables.
	built, sent int
	received    map[string]int   // event id -> received_invoic rows
	schedule    map[string][]int // role -> progress thresholds of its crashes left
	sum         *invoicerSummary
}

// The roles of the children, in the order the crashes are spread over them.
var invoicerRoles = []string{"consumer", "relay", "partner"}

func (d *invoicerDemo) execute(ctx context.Context) (*invoicerSummary, error) {
	start := time.Now()
	d.rng = rand.New(rand.NewPCG(d.o.Seed, d.o.Seed>>1|1))
	d.run = strconv.FormatUint(d.o.Seed%1_000_000_007, 36)
	if err := d.openDatabases(ctx); err != nil {
		return nil, err
	}
	defer d.sender.Close()
	defer d.partner.Close()
	stream := d.plan()
	stopKafka, err := d.startKafka(ctx, stream)
	if err != nil {
		return nil, err
	}
	defer stopKafka()
	if d.addr, err = freeAddr(); err != nil {
		return nil, err
	}
	d.sum = &invoicerSummary{Scenario: "invoicer", Sabotage: d.o.Sabotage, DB: d.sender.Kind, Where: d.sender.Where + ", Kafka at " + d.seeds + ", AS4 partner at " + d.addr,
		Run: d.run, Invoices: len(d.events), Published: len(stream), Resent: len(stream) - len(d.events),
		CrashPoints: map[string]int{}}
	d.planCrashes()
	runErr := d.supervise(ctx)
	d.stopAll()
	if runErr != nil {
		return nil, runErr
	}
	if err := d.verify(ctx); err != nil {
		return nil, err
	}
	d.sum.ElapsedMS = time.Since(start).Milliseconds()
	return d.sum, nil
}

// openDatabases opens and migrates the sender's database and the
// partner's: another SQLite file next to the sender's, or the schema
// --partner-schema of the same PostgreSQL database.
func (d *invoicerDemo) openDatabases(ctx context.Context) error {
	d.senderF = d.o.DB
	if clikit.IsMySQLURL(d.o.DB.URL) {
		return errors.New("the invoicer scenario needs PostgreSQL or SQLite (its AS4 partner's tables are not available on MySQL yet)")
	}
	d.partnerF = clikit.DBFlags{URL: d.o.DB.URL, Prefix: d.o.DB.Prefix, Schema: d.o.Invoicer.PartnerSchema}
	if !clikit.IsPostgresURL(d.o.DB.URL) {
		d.partnerF.Schema = ""
		d.partnerF.URL = strings.TrimSuffix(d.o.DB.URL, ".db") + "-partner.db"
	}
	var err error
	if d.sender, err = clikit.OpenDB(ctx, d.senderF, 4); err != nil {
		return err
	}
	if d.partner, err = clikit.OpenDB(ctx, d.partnerF, 4); err != nil {
		d.sender.Close()
		return err
	}
	if err := d.migrate(ctx); err != nil {
		d.sender.Close()
		d.partner.Close()
		return err
	}
	return nil
}

func (d *invoicerDemo) migrate(ctx context.Context) error {
	if d.sender.SQLPG != nil || d.partner.SQLPG != nil {
		return errors.New("the invoicer scenario runs on pgstore or SQLite (package invoicer writes through a pgx.Tx): " +
			"txinbox_store=database/sql is not available for it")
	}
	if err := d.sender.Admin.Migrate(ctx); err != nil {
		return fmt.Errorf("migrating %s: %w", d.sender.Where, err)
	}
	if err := d.partner.Admin.Migrate(ctx); err != nil {
		return fmt.Errorf("migrating the partner's inbox: %w", err)
	}
	if d.sender.PG != nil {
		if err := invoicer.MigratePostgreSQL(ctx, d.sender.PG.Pool()); err != nil {
			return err
		}
		st, err := as4pg.New(d.partner.PG.Pool(), as4pg.Options{Schema: d.partnerF.Schema, TablePrefix: d.partnerF.Prefix})
		if err == nil {
			err = st.Migrate(ctx)
		}
		if err != nil {
			return fmt.Errorf("migrating the partner's AS4 tables: %w", err)
		}
	} else {
		if err := invoicer.MigrateSQLite(ctx, d.sender.Lite.DB()); err != nil {
			return err
		}
		st, err := as4sqlite.New(d.partner.Lite.DB(), as4sqlite.Options{TablePrefix: d.partnerF.Prefix})
		if err == nil {
			err = st.Migrate(ctx)
		}
		if err != nil {
			return fmt.Errorf("migrating the partner's AS4 tables: %w", err)
		}
	}
	d.pt = partnerTablesFor(d.partner, d.partnerF.Schema)
	if err := createPartnerTables(ctx, d.partner, d.pt); err != nil {
		return err
	}
	// Each run starts with the partner's demo tables empty, so that what
	// they hold afterwards is this run's deliveries, for anyone to count.
	for _, t := range []string{d.pt.received, d.pt.duplicates} {
		if err := d.partner.Exec(ctx, `DELETE FROM `+t); err != nil {
			return fmt.Errorf("emptying %s: %w", t, err)
		}
	}
	for _, b := range []struct {
		table string
		into  *int64
	}{{d.pt.received, &d.receivedBase}, {d.pt.duplicates, &d.dupBase}} {
		if err := d.partner.Query(ctx, `SELECT coalesce(max(id), 0) FROM `+b.table, nil, []any{b.into}, func() error { return nil }); err != nil {
			return err
		}
	}
	return nil
}

// plan makes the events and the published stream: each event once, a
// share (--duplicates) a second time somewhere after the first.
func (d *invoicerDemo) plan() []int {
	names := []string{"ACME", "GLOBEX", "INITECH"}
	base := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	d.byMsgID = map[string]int{}
	d.byID = map[string]int{}
	d.received = map[string]int{}
	var stream []int
	for i := range d.o.Invoicer.Invoices {
		var lines []invoicer.Line
		for l := range 1 + d.rng.IntN(3) {
			lines = append(lines, invoicer.Line{SKU: fmt.Sprintf("SKU-%03d", d.rng.IntN(500)), Description: fmt.Sprintf("Article %d", l+1),
				Quantity: int64(1 + d.rng.IntN(20)), UnitPriceCents: int64(100 + d.rng.IntN(50_000))})
		}
		ev := newInvoicerEvent(d.run, i+1, names[d.rng.IntN(len(names))], lines, base.Add(time.Duration(i)*time.Minute))
		d.byMsgID[ev.messageID] = i
		d.byID[ev.id] = i
		d.events = append(d.events, ev)
		stream = append(stream, i)
	}
	for range int(float64(len(d.events))*d.o.Duplicates + 0.5) {
		orig := d.rng.IntN(len(d.events))
		pos := orig + 1 + d.rng.IntN(len(stream)-orig)
		stream = append(stream[:pos], append([]int{orig}, stream[pos:]...)...)
	}
	return stream
}

// startKafka starts a one-broker kfake cluster in a txinbox-brokers child
// process (unless --kafka-brokers names a cluster) and publishes the
// stream, the event id in the message-id header. stop ends the cluster.
func (d *invoicerDemo) startKafka(ctx context.Context, stream []int) (stop func(), err error) {
	stop = func() {}
	d.session = demo.KafkaSession
	if seeds := d.o.External.KafkaSeeds(); len(seeds) > 0 {
		d.seeds = seeds[0]
		if d.session, err = externalSession(ctx, seeds); err != nil {
			return nil, err
		}
	} else {
		r, err := demo.StartBrokers(ctx, d.env, brokers.Options{Kafka: 1})
		if err != nil {
			return nil, err
		}
		d.seeds, stop = r.KafkaSeeds[0], func() { r.Stop() } //nolint:errcheck // best effort at the end
	}
	d.topic = "invoices-" + d.run
	if err := d.publishKafka(ctx, stream); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// externalSession is the consumers' session timeout on the cluster of
// --kafka-brokers (see demo.KafkaSessionOn).
func externalSession(ctx context.Context, seeds []string) (time.Duration, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	return demo.KafkaSessionOn(ctx, kadm.NewClient(cl))
}

// publishKafka creates the run's topic and publishes the stream to it.
func (d *invoicerDemo) publishKafka(ctx context.Context, stream []int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.seeds))
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, -1, nil, d.topic); err != nil {
		return fmt.Errorf("creating topic %s: %w", d.topic, err)
	}
	recs := make([]*kgo.Record, len(stream))
	for i, e := range stream {
		ev := d.events[e]
		recs[i] = &kgo.Record{Topic: d.topic, Key: []byte(ev.id), Value: ev.payload,
			Headers: []kgo.RecordHeader{{Key: invoicerKafkaHeader, Value: []byte(ev.id)}}}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("publishing to %s: %w", d.topic, err)
	}
	return nil
}

// freeAddr picks a local port for the partner endpoint; every restart of
// the partner listens on it again.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// planCrashes spreads --crashes over the roles, round robin, each at a
// random point of its role's progress (invoices built, sent, received).
func (d *invoicerDemo) planCrashes() {
	d.schedule = map[string][]int{}
	per := map[string]int{}
	for i := range d.o.Crashes {
		per[invoicerRoles[i%len(invoicerRoles)]]++
	}
	n := len(d.events)
	for role, c := range per {
		for i := range c {
			// The i-th of c crashes falls in the i-th of c+1 slices of
			// the work, at a random point of it.
			lo, hi := i*n/(c+1), (i+1)*n/(c+1)
			d.schedule[role] = append(d.schedule[role], lo+d.rng.IntN(max(1, hi-lo)))
		}
	}
}

func printInvoicerSummary(env *clikit.Env, s *invoicerSummary) {
	w := env.Stdout
	fmt.Fprintf(w, "txinbox demo --scenario invoicer on %s (%s), run %s\n", s.DB, s.Where, s.Run)
	if s.Sabotage != "" {
		fmt.Fprintf(w, "  sabotage                 %s (on purpose; see docs/invoicer.md)\n", s.Sabotage)
	}
	fmt.Fprintf(w, "  invoices                 %6d  unique InvoiceIssued events (%d published, %d re-sent by the producer)\n", s.Invoices, s.Published, s.Resent)
	fmt.Fprintf(w, "  INVOIC built             %6d  partner_invoices rows (%d invoices twice, %d never; %d UNB control references reused)\n",
		s.InvoicBuilt, s.DoubleInvoices, s.LostInvoices, s.UNBRefsReusedSender)
	fmt.Fprintf(w, "  outbox rows              %6d  %d sent with the partner's receipt stored\n", s.OutboxRows, s.OutboxSentReceipt)
	fmt.Fprintf(w, "  signed NRR receipts      %6d  signed, encrypted INVOICs answered with verified signed receipts\n", s.OutboxSignedReceipt)
	fmt.Fprintf(w, "  invoic_delivered         %6d  received_invoic rows at the partner (%d invoices twice, %d never, %d wrong UNB reference, %d UNB references reused, %d MessageIds not derived)\n",
		s.InvoicDelivered, s.DeliveredTwice, s.NeverDelivered, s.WrongUNBRef, s.UNBRefsReusedPar, s.MessageIDsNotDerived)
	fmt.Fprintf(w, "  duplicates at partner    %6d  AS4 resends the partner's inbox recognised and answered with the stored receipt\n", s.DuplicatesDroppedAtPartner)
	fmt.Fprintf(w, "  crashes                  %6d  SIGKILL %s\n", s.Crashes, demo.FormatCrashPoints(s.CrashPoints))
	fmt.Fprintf(w, "  elapsed                  %6.1fs\n", float64(s.ElapsedMS)/1000)
	if s.OK {
		fmt.Fprintln(w, "OK: every invoice reached the partner as exactly one INVOIC, with its own UNB control reference.")
	} else {
		fmt.Fprintln(w, "FAILED: an invoice was built or delivered twice or never, a control reference was reused, or a row was not sent.")
	}
}

// verify counts everything from the tables, independently of what the
// children reported (they report nothing).
func (d *invoicerDemo) verify(ctx context.Context) error {
	s := d.sum
	// Sender: one partner_invoices row per event, each with its own UNB
	// control reference.
	refOf := map[string]string{} // event id -> unb_ref
	perID := map[string]int{}
	var id, ref string
	if err := d.sender.Query(ctx, `SELECT message_id, coalesce(unb_ref, '') FROM partner_invoices WHERE run_id = $1`, []any{d.run},
		[]any{&id, &ref}, func() error { perID[id]++; refOf[id] = ref; s.InvoicBuilt++; return nil }); err != nil {
		return fmt.Errorf("reading partner_invoices: %w", err)
	}
	for _, ev := range d.events {
		switch n := perID[ev.id]; {
		case n == 0:
			s.LostInvoices++
		case n > 1:
			s.DoubleInvoices += n - 1
		}
	}
	if err := d.sender.Query(ctx, `SELECT count(*) FROM (SELECT unb_ref FROM partner_invoices WHERE unb_ref IS NOT NULL
		GROUP BY unb_ref HAVING count(*) > 1) reused`, nil, []any{&s.UNBRefsReusedSender}, func() error { return nil }); err != nil {
		return fmt.Errorf("checking the control references: %w", err)
	}
	if err := d.sender.Query(ctx, `SELECT count(*), coalesce(sum(CASE WHEN sent_at IS NOT NULL AND receipt IS NOT NULL AND length(receipt) > 0
		THEN 1 ELSE 0 END), 0) FROM `+d.sender.OutboxTable()+` WHERE scope = $1 AND message_id LIKE $2`,
		[]any{invoicer.DefaultScope, d.runPattern()}, []any{&s.OutboxRows, &s.OutboxSentReceipt}, func() error { return nil }); err != nil {
		return fmt.Errorf("reading the outbox: %w", err)
	}
	var receipt []byte
	if err := d.sender.Query(ctx, `SELECT receipt FROM `+d.sender.OutboxTable()+` WHERE scope = $1 AND message_id LIKE $2 AND receipt IS NOT NULL`,
		[]any{invoicer.DefaultScope, d.runPattern()}, []any{&receipt}, func() error {
			if bytes.Contains(receipt, []byte("NonRepudiationInformation")) && bytes.Contains(receipt, []byte("<ds:SignatureValue>")) {
				s.OutboxSignedReceipt++
			}
			return nil
		}); err != nil {
		return fmt.Errorf("reading the outbox receipts: %w", err)
	}
	if err := d.verifyPartner(ctx, refOf); err != nil {
		return err
	}
	n := len(d.events)
	s.OK = s.InvoicBuilt == n && s.DoubleInvoices == 0 && s.LostInvoices == 0 && s.UNBRefsReusedSender == 0 &&
		s.OutboxRows == n && s.OutboxSentReceipt == n && s.OutboxSignedReceipt == n &&
		s.InvoicDelivered == n && s.DeliveredTwice == 0 && s.NeverDelivered == 0 && s.WrongUNBRef == 0 && s.UNBRefsReusedPar == 0 &&
		s.MessageIDsNotDerived == 0 &&
		s.Crashes == d.o.Crashes
	return nil
}

// verifyPartner checks received_invoic: one row per invoice, carrying the
// control reference the sender drew for it and the MessageId derived from
// its outbox row, no reference twice; and counts the recognised resends.
// A row belongs to the invoice named by its ConversationId (the event id),
// so that a delivery under another MessageId is counted against its
// invoice, not overlooked.
func (d *invoicerDemo) verifyPartner(ctx context.Context, refOf map[string]string) error {
	s := d.sum
	perEvent := map[string]int{}
	refs := map[string]int{}
	var msgID, conv, ref string
	if err := d.partner.Query(ctx, `SELECT message_id, conversation_id, unb_ref FROM `+d.pt.received+` WHERE id > $1`, []any{d.receivedBase},
		[]any{&msgID, &conv, &ref}, func() error {
			i, ok := d.byID[conv]
			if !ok {
				if i, ok = d.byMsgID[msgID]; !ok {
					return nil // another run's
				}
			}
			s.InvoicDelivered++
			perEvent[d.events[i].id]++
			if msgID != d.events[i].messageID {
				s.MessageIDsNotDerived++
			}
			if refs[ref]++; refs[ref] == 2 {
				s.UNBRefsReusedPar++
			}
			if refOf[d.events[i].id] != ref {
				s.WrongUNBRef++
			}
			return nil
		}); err != nil {
		return fmt.Errorf("reading the partner's received_invoic: %w", err)
	}
	for _, ev := range d.events {
		switch n := perEvent[ev.id]; {
		case n == 0:
			s.NeverDelivered++
		case n > 1:
			s.DeliveredTwice += n - 1
		}
	}
	return d.partner.Query(ctx, `SELECT message_id FROM `+d.pt.duplicates+` WHERE id > $1`, []any{d.dupBase},
		[]any{&msgID}, func() error {
			if _, ok := d.byMsgID[msgID]; ok {
				s.DuplicatesDroppedAtPartner++
			}
			return nil
		})
}
