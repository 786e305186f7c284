package invoicerdemo_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/testdb"
)

type invoicerResult struct {
	Invoices                   int            `json:"invoices"`
	Published                  int            `json:"published"`
	InvoicBuilt                int            `json:"invoic_built"`
	OutboxRows                 int            `json:"outbox_rows"`
	OutboxSentReceipt          int            `json:"outbox_sent_with_receipt"`
	OutboxSignedReceipt        int            `json:"outbox_signed_receipt"`
	InvoicDelivered            int            `json:"invoic_delivered"`
	DeliveredTwice             int            `json:"delivered_twice"`
	NeverDelivered             int            `json:"never_delivered"`
	WrongUNBRef                int            `json:"wrong_unb_ref"`
	UNBRefsReusedSender        int            `json:"unb_refs_reused_sender"`
	UNBRefsReusedPartner       int            `json:"unb_refs_reused_partner"`
	MessageIDsNotDerived       int            `json:"message_ids_not_derived"`
	DuplicatesDroppedAtPartner int            `json:"duplicates_dropped_at_partner"`
	Sabotage                   string         `json:"sabotage"`
	Crashes                    int            `json:"crashes"`
	CrashPoints                map[string]int `json:"crash_points"`
	OK                         bool           `json:"ok"`
}

func runInvoicerDemo(t *testing.T, args ...string) invoicerResult {
	t.Helper()
	return runInvoicerDemoExit(t, 0, args...)
}

// runInvoicerDemoExit runs the invoicer demo with --json and wants exit
// status code and the summary on stdout.
func runInvoicerDemoExit(t *testing.T, want int, args ...string) invoicerResult {
	t.Helper()
	out, errs, code := runBin(t, append([]string{"demo", "--scenario", "invoicer", "--json"}, args...)...)
	var r invoicerResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != want {
		t.Fatalf("txinbox demo --scenario invoicer %v: exit %d, %v\nstdout: %s\nstderr: %s", args, code, err, out, errs)
	}
	return r
}

func checkInvoicer(t *testing.T, r invoicerResult, invoices, crashes int) {
	t.Helper()
	if !r.OK || r.Invoices != invoices || r.InvoicBuilt != invoices || r.OutboxRows != invoices || r.OutboxSentReceipt != invoices || r.OutboxSignedReceipt != invoices ||
		r.InvoicDelivered != invoices || r.DeliveredTwice != 0 || r.NeverDelivered != 0 || r.WrongUNBRef != 0 ||
		r.UNBRefsReusedSender != 0 || r.UNBRefsReusedPartner != 0 {
		t.Errorf("not exactly one INVOIC per invoice: %+v", r)
	}
	if r.Crashes != crashes {
		t.Errorf("crashes = %d, want %d", r.Crashes, crashes)
	}
	for _, role := range []string{"consumer", "relay", "partner"} {
		if r.CrashPoints[role] != crashes/3 {
			t.Errorf("%d crashes of the %s, want %d: %v", r.CrashPoints[role], role, crashes/3, r.CrashPoints)
		}
	}
	if r.Published <= r.Invoices {
		t.Errorf("no event re-sent by the producer: %+v", r)
	}
}

func TestDemoInvoicerSQLite(t *testing.T) {
	t.Parallel()
	r := runInvoicerDemo(t, "--db", filepath.Join(t.TempDir(), "sender.db"), "--invoices", "150", "--crashes", "6", "--seed", "7")
	checkInvoicer(t, r, 150, 6)
}

func TestDemoInvoicerPostgres(t *testing.T) {
	t.Parallel()
	pool := testdb.Require(t)
	schema, partner := testdb.NewSchema(t, pool), testdb.NewSchema(t, pool)
	url := testdb.URL() + "&search_path=" + schema + "&application_name=txinbox-invoicer-demo-test"
	if !strings.Contains(testdb.URL(), "?") {
		url = strings.Replace(url, "&search_path", "?search_path", 1)
	}
	r := runInvoicerDemo(t, "--db", url, "--partner-schema", partner, "--invoices", "300", "--crashes", "9", "--duplicates", "0.3")
	checkInvoicer(t, r, 300, 9)
	if r.Published != 390 {
		t.Errorf("published = %d, want 390", r.Published)
	}
}

func TestDemoInvoicerText(t *testing.T) {
	t.Parallel()
	// --messages, the plain demo's name for the count, works too.
	out, errs, code := runBin(t, "demo", "--scenario", "invoicer", "--messages", "30", "--crashes", "3")
	if code != 0 || !strings.Contains(out, "OK: every invoice reached the partner as exactly one INVOIC") ||
		!strings.Contains(out, "invoices                     30") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

func TestDemoInvoicerFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--scenario", "nope"},
		{"--scenario", "invoicer", "--invoices", "0"},
		{"--scenario", "invoicer", "--source", "nats"},
		{"--scenario", "invoicer", "--messages", "5", "--invoices", "6"},
		{"--scenario", "invoicer", "--sabotage", "delivery-key"},
		{"--scenario", "invoicer", "--sabotage", "ack-first"},
		{"--scenario", "invoicer", "--sabotage", "nope"},
	} {
		_, errs, code := runBin(t, append([]string{"demo"}, args...)...)
		// Checked by the flag itself (numbers) or by demo: either names it.
		if code != 2 || (!strings.Contains(errs, "txinbox demo: --") && !strings.Contains(errs, "for flag -")) {
			t.Errorf("demo %v: exit %d, stderr %q; want a usage error naming the flag", args, code, errs)
		}
		if args[1] == "invoicer" && args[2] == "--sabotage" &&
			!strings.Contains(errs, "fresh-message-id, lost-receipts, partner-without-inbox") {
			t.Errorf("demo %v: stderr %q does not list the invoicer's sabotage modes", args, errs)
		}
	}
}

// TestDemoInvoicerCatchesSabotage breaks, on purpose, one of the two things
// that keep an INVOIC from arriving twice, with every row's first receipt
// lost so that every row is sent again: the checker must see each invoice
// delivered twice and exit 1, crashes (one per process) or not.
func TestDemoInvoicerCatchesSabotage(t *testing.T) {
	t.Parallel()
	const n = 12
	for _, mode := range []string{"fresh-message-id", "partner-without-inbox"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			r := runInvoicerDemoExit(t, 1, "--db", filepath.Join(t.TempDir(), "sender.db"), "--invoices", "12", "--crashes", "3",
				"--sabotage", mode, "--seed", "11")
			// The sender did its part: one INVOIC, one sent row per invoice.
			if r.Sabotage != mode || r.OK || r.Crashes != 3 || r.InvoicBuilt != n || r.OutboxRows != n || r.OutboxSentReceipt != n || r.UNBRefsReusedSender != 0 {
				t.Errorf("sender side: %+v", r)
			}
			// Every invoice arrived at least twice, each copy attributed
			// to its invoice and carrying its own UNB reference.
			if r.DeliveredTwice < n || r.InvoicDelivered != n+r.DeliveredTwice || r.NeverDelivered != 0 ||
				r.UNBRefsReusedPartner != n || r.WrongUNBRef != 0 {
				t.Errorf("double delivery not reported: %+v", r)
			}
			switch mode {
			case "fresh-message-id":
				// Every send had a fresh MessageId, never the derived one.
				if r.MessageIDsNotDerived != r.InvoicDelivered || r.DuplicatesDroppedAtPartner != 0 {
					t.Errorf("fresh MessageIds: %+v", r)
				}
			case "partner-without-inbox":
				if r.MessageIDsNotDerived != 0 || r.DuplicatesDroppedAtPartner != 0 {
					t.Errorf("derived MessageIds, resends not dropped: %+v", r)
				}
			}
		})
	}
}

// TestDemoInvoicerLostReceiptsControl is the control of the sabotage test:
// the same lost receipts and resends, but under the derived MessageId,
// which the partner's inbox recognises every time.
func TestDemoInvoicerLostReceiptsControl(t *testing.T) {
	t.Parallel()
	const n = 12
	r := runInvoicerDemo(t, "--db", filepath.Join(t.TempDir(), "sender.db"), "--invoices", "12", "--crashes", "3",
		"--sabotage", "lost-receipts", "--seed", "11")
	checkInvoicer(t, r, n, 3)
	if r.Sabotage != "lost-receipts" || r.MessageIDsNotDerived != 0 || r.DuplicatesDroppedAtPartner < n {
		t.Errorf("want every first receipt lost and every resend dropped at the partner: %+v", r)
	}
}
