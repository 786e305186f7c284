package invoicer

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/edi"
	"github.com/txinbox/txinbox/edi/edifact"
)

var (
	testSender    = edifact.Party{ID: "5790000000001", Qualifier: "14"}
	testRecipient = edifact.Party{ID: "5790000000002", Qualifier: "14"}
)

func testEvent(id string) *InvoiceIssued {
	return &InvoiceIssued{Type: EventType, InvoiceID: id, Partner: "ACME", IssuedAt: time.Date(2026, 11, 30, 9, 5, 0, 0, time.UTC),
		Lines: []Line{{SKU: "SKU-1", Description: "Bolts M8 (box of 100)", Quantity: 3, UnitPriceCents: 1250},
			{SKU: "SKU+2:weird'?", Quantity: 1, UnitPriceCents: 99}}}
}

// segments splits an interchange into segments, honouring the release
// character of the default separators.
func segments(t *testing.T, b []byte) []string {
	t.Helper()
	if !bytes.HasPrefix(b, []byte("UNA:+.? '")) {
		t.Fatalf("no default UNA: %q", b)
	}
	var out []string
	var cur strings.Builder
	for i := 9; i < len(b); i++ {
		switch c := b[i]; {
		case c == '?' && i+1 < len(b):
			cur.WriteByte(c)
			cur.WriteByte(b[i+1])
			i++
		case c == '\'':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() != 0 {
		t.Fatalf("bytes after the last segment terminator: %q", cur.String())
	}
	return out
}

func TestBuildINVOICReadsBack(t *testing.T) {
	t.Parallel()
	b, err := BuildINVOIC(testEvent("INV-2026-0042"), "1234", testSender, testRecipient)
	if err != nil {
		t.Fatal(err)
	}
	// txinbox's own key extraction: the key is (sender, recipient, control reference).
	keys, err := edi.Keys(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("edi.Keys: %v\n%s", err, b)
	}
	want := edi.EncodeID(edi.KindEDIFACT, testSender.ID, "14", testRecipient.ID, "14", "1234", "")
	if len(keys) != 1 || keys[0].ID != want {
		t.Fatalf("keys = %+v, want one with ID %s", keys, want)
	}
	ics, err := edifact.Parse(bytes.NewReader(b))
	if err != nil || len(ics) != 1 || ics[0].Messages != 1 || ics[0].Syntax != "UNOC" || ics[0].Version != "3" ||
		ics[0].Date != "261130" || ics[0].Time != "0905" {
		t.Fatalf("Parse: %v %+v", err, ics)
	}
	segs := segments(t, b)
	if !strings.HasPrefix(segs[0], "UNB+UNOC:3+5790000000001:14+5790000000002:14+261130:0905+1234") {
		t.Errorf("UNA/UNB = %q", segs[0])
	}
	// UNT counts the segments from UNH to UNT; UNZ counts the messages and
	// repeats the control reference.
	var unh, unt int
	for i, s := range segs {
		switch {
		case strings.HasPrefix(s, "UNH+"):
			unh = i
			if s != "UNH+1+INVOIC:D:96A:UN" {
				t.Errorf("UNH = %q", s)
			}
		case strings.HasPrefix(s, "UNT+"):
			unt = i
			if want := "UNT+" + strconv.Itoa(unt-unh+1) + "+1"; s != want {
				t.Errorf("UNT = %q, want %q", s, want)
			}
		}
	}
	if last := segs[len(segs)-1]; last != "UNZ+1+1234" || unt != len(segs)-2 {
		t.Errorf("UNZ = %q (UNT at %d of %d)", last, unt, len(segs))
	}
	for _, want := range []string{"BGM+380+INV-2026-0042+9", "DTM+137:20261130:102", "NAD+SU+5790000000001::9",
		"NAD+BY+5790000000002::9", "CUX+2:EUR:4", "LIN+2++SKU?+2?:weird?'??:SA", "IMD+F++:::Bolts M8 (box of 100)",
		"QTY+47:3", "MOA+203:37.50", "PRI+AAA:12.50", "CNT+2:2", "MOA+79:38.49", "MOA+86:38.49"} {
		found := false
		for _, s := range segs {
			found = found || s == want
		}
		if !found {
			t.Errorf("no segment %q in\n%s", want, strings.Join(segs, "'\n"))
		}
	}
	again, _ := BuildINVOIC(testEvent("INV-2026-0042"), "1234", testSender, testRecipient)
	if !bytes.Equal(again, b) {
		t.Error("BuildINVOIC is not deterministic: a resend would be drift")
	}
}

func TestParseEventErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{`{`, "not valid JSON"},
		{`{"type":"Other"}`, `type is "Other"`},
		{`{"type":"InvoiceIssued","invoice_id":"I1","partner":"P","issued_at":"2026-01-01T00:00:00Z"}`, "lines"},
		{`{"type":"InvoiceIssued","invoice_id":"I1","issued_at":"2026-01-01T00:00:00Z","lines":[{"sku":"a","quantity":1}]}`, "partner is required"},
		{`{"type":"InvoiceIssued","invoice_id":"I1","partner":"P","issued_at":"2026-01-01T00:00:00Z","lines":[{"sku":"a","quantity":0}]}`, "lines[0].quantity"},
		{`{"type":"InvoiceIssued","invoice_id":"I1","partner":"P","lines":[{"sku":"a","quantity":1}]}`, "issued_at"},
	} {
		if _, err := ParseEvent([]byte(tt.in)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseEvent(%s) = %v, want an error containing %q", tt.in, err, tt.want)
		}
	}
	if _, err := BuildINVOIC(testEvent("X"), "", testSender, testRecipient); err == nil || !strings.Contains(err.Error(), "0020") {
		t.Errorf("empty control reference: %v", err)
	}
}
