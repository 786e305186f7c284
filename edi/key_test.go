package edi

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"testing/quick"

	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/edi/edifact"
	"github.com/txinbox/txinbox/edi/x12"
)

func TestEncodeID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind Kind
		vals []string
		want string
	}{
		{KindEDIFACT, []string{"5790000274017", "14", "5708601000836", "14", "17", ""}, "edifact:5790000274017|14|5708601000836|14|17|"},
		{KindEDIFACT, []string{"A|B", "50%", "a b", "é", "x:y+z'", "\n"}, "edifact:A%7CB|50%25|a%20b|%C3%A9|x:y+z'|%0A"},
		{KindX12, []string{"ZZ", "SENDER", "01", "RECEIVER", "000000001", "P"}, "x12:ZZ|SENDER|01|RECEIVER|000000001|P"},
		{KindAS4, []string{"P1", "urn:t", "id@x"}, "as4:P1|urn:t|id@x"},
	}
	for _, tt := range tests {
		if got := EncodeID(tt.kind, tt.vals...); got != tt.want {
			t.Errorf("EncodeID(%q) = %q, want %q", tt.vals, got, tt.want)
		}
		kind, vals, err := DecodeID(tt.want)
		if err != nil || kind != tt.kind || !slices.Equal(vals, tt.vals) {
			t.Errorf("DecodeID(%q) = %q, %q, %v", tt.want, kind, vals, err)
		}
	}
}

// TestIDRoundTripAndInjective checks with random tuples that DecodeID
// inverts EncodeID, so two different tuples never share an ID, and that IDs
// are printable ASCII.
func TestIDRoundTripAndInjective(t *testing.T) {
	t.Parallel()
	f := func(a, b, c string) bool {
		id := EncodeID(KindAS4, a, b, c)
		for i := 0; i < len(id); i++ {
			if id[i] <= ' ' || id[i] >= 0x7f {
				return false
			}
		}
		kind, vals, err := DecodeID(id)
		return err == nil && kind == KindAS4 && slices.Equal(vals, []string{a, b, c})
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
	// The kind prefix keeps syntaxes apart even for the same values.
	if EncodeID(KindEDIFACT, "a", "b", "c", "d", "e", "f") == EncodeID(KindX12, "a", "b", "c", "d", "e", "f") {
		t.Error("EDIFACT and X12 IDs collide")
	}
}

func TestDecodeIDErrors(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"", "edifact", "tradacoms:a", "as4:a|b", "as4:a|b|c|d", "as4:a|b|%4", "as4:a|b|%zz"} {
		if _, _, err := DecodeID(id); !errors.Is(err, ErrBadID) {
			t.Errorf("DecodeID(%q) = %v, want ErrBadID", id, err)
		}
	}
}

func TestKeyString(t *testing.T) {
	t.Parallel()
	k := newKey(KindEDIFACT, 0, "S 1", "14", "R", "", "a=b", "1")
	want := `edifact sender="S 1" sender_qualifier=14 recipient=R recipient_qualifier="" control_ref="a=b" test_indicator=1`
	if got := k.String(); got != want {
		t.Errorf("String() = %s\nwant       %s", got, want)
	}
	if got := FieldNames(KindX12); !slices.Equal(got, []string{"sender_qualifier", "sender", "receiver_qualifier", "receiver", "control_number", "usage"}) {
		t.Errorf("FieldNames(x12) = %q", got)
	}
}

func TestKeysFromParsers(t *testing.T) {
	t.Parallel()
	ed := EdifactKey(&edifact.Interchange{Offset: 5, Sender: edifact.Party{ID: "S", Qualifier: "1"}, Recipient: edifact.Party{ID: "R"}, ControlRef: "9", TestIndicator: "1"})
	if ed.ID != "edifact:S|1|R||9|1" || ed.Offset != 5 || ed.Fields[4] != (Field{Name: "control_ref", Value: "9"}) {
		t.Errorf("EdifactKey = %+v", ed)
	}
	xk := X12Key(&x12.Interchange{Sender: x12.Party{Qualifier: "ZZ", ID: "S"}, Receiver: x12.Party{Qualifier: "01", ID: "R"}, ControlNumber: "000000001", Usage: "T"})
	if xk.ID != "x12:ZZ|S|01|R|000000001|T" {
		t.Errorf("X12Key = %+v", xk)
	}
	ak := AS4Key(&ebms.Message{MessageID: "m", From: ebms.Party{IDs: []ebms.PartyID{{Type: "t", ID: "p"}, {ID: "q"}}}})
	if ak.ID != "as4:p|t|m" {
		t.Errorf("AS4Key = %+v", ak)
	}
}

// TestAS4KeyScopedByParty: the same MessageId from another party is another
// message, and a signal's id never becomes a key.
func TestAS4KeyScopedByParty(t *testing.T) {
	t.Parallel()
	msg := func(party, unit string) string {
		return `<S12:Envelope xmlns:S12="http://www.w3.org/2003/05/soap-envelope" xmlns:eb="http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/"><S12:Header><eb:Messaging>` +
			strings.ReplaceAll(unit, "PARTY", party) + `</eb:Messaging></S12:Header><S12:Body/></S12:Envelope>`
	}
	user := `<eb:UserMessage><eb:MessageInfo><eb:MessageId>same@id</eb:MessageId></eb:MessageInfo><eb:PartyInfo><eb:From><eb:PartyId>PARTY</eb:PartyId></eb:From></eb:PartyInfo></eb:UserMessage>`
	a, errA := KeysMIME(strings.NewReader(msg("A", user)), "application/soap+xml")
	b, errB := KeysMIME(strings.NewReader(msg("B", user)), "application/soap+xml")
	if errA != nil || errB != nil || a[0].ID == b[0].ID {
		t.Errorf("keys %v %v (%v, %v): want two different keys", a, b, errA, errB)
	}
	signal := `<eb:SignalMessage><eb:MessageInfo><eb:MessageId>same@id</eb:MessageId></eb:MessageInfo><eb:Receipt/></eb:SignalMessage>`
	if keys, err := Keys(strings.NewReader(msg("A", signal))); keys != nil || !errors.Is(err, ebms.ErrSignalMessage) {
		t.Errorf("signal: %v, %v; want ErrSignalMessage", keys, err)
	}
}

func TestSniff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Kind
	}{
		{"ISA*00*", KindX12}, {"\xef\xbb\xbf\r\nISA|00", KindX12}, {"ISAX", ""},
		{"UNA:+.? 'UNB", KindEDIFACT}, {"UNB+UNOA", KindEDIFACT}, {"DOC+x'UNA:+.? 'UNB+", KindEDIFACT},
		{"<?xml", KindAS4}, {"<!-- c --><S12:Envelope", KindAS4},
		{"Content-Type: multipart/related\r\n\r\n", KindAS4}, {"POST /as4 HTTP/1.1\r\nContent-Type: text/xml\r\n\r\n", KindAS4},
		{"Subject: no content type\r\n\r\nUNB+", KindEDIFACT}, {"STX=ANA:1", ""}, {"--b\r\nContent-Type: application/soap+xml\r\n\r\n<S12:Envelope", KindAS4}, {"--x\r\nUNB+", KindEDIFACT}, {"BGM+380", ""}, {"", ""}, {"hello", ""},
	}
	for _, tt := range tests {
		if got := sniff([]byte(tt.in)); got != tt.want {
			t.Errorf("sniff(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestKeysUnknown(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", "edi: unknown format: the input is empty"},
		{"STX=ANA:1+x'", "TRADACOMS (STX=) is not supported"},
		{"BGM+380+1'", `input starts with segment "BGM" but has no interchange envelope`},
		{"hello world", `no UNA/UNB (EDIFACT), ISA (X12), XML or MIME headers (AS4) in the first 11 bytes, which start "hello world"`},
	}
	for _, tt := range tests {
		keys, err := Keys(strings.NewReader(tt.in))
		if keys != nil || !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Keys(%q) = %v, %v; want ErrUnknownFormat containing %q", tt.in, keys, err, tt.want)
		}
	}
}

func TestKeysAllOrNothing(t *testing.T) {
	t.Parallel()
	good := "UNB+UNOA:3+S+R+000101:0000+1'UNH+1+X'UNT+2+1'UNZ+1+1'"
	bad := "UNB+UNOA:3+S+R+000101:0000+2'UNH+1+X'UNT+2+1'UNZ+2+2'"
	keys, err := Keys(strings.NewReader(good + good + bad))
	var se *edifact.SyntaxError
	if keys != nil || !errors.As(err, &se) || se.Segment != "UNZ" || se.Offset != int64(3*len(good)-len("UNZ+2+2'")) {
		t.Errorf("Keys = %v, %v; want no keys and the UNZ error of the third interchange", keys, err)
	}
}

// failOnce fails its first read and then reports the end of the input: a
// reader whose error is easy to lose.
type failOnce struct{ err error }

func (f *failOnce) Read([]byte) (int, error) {
	if err := f.err; err != nil {
		f.err = nil
		return 0, err
	}
	return 0, io.EOF
}

// TestKeysReadError: a read error is returned, never taken for the end of
// the input, both inside the sniff window and after it.
func TestKeysReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("disk on fire")
	unb := "UNA:+.? 'UNB+UNOC:3+SENDER:14+RECEIVER:14+200101:1200+REF1'UNH+1+INVOIC:D:96A:UN'"
	for name, r := range map[string]io.Reader{
		"in the sniff window": io.MultiReader(strings.NewReader(unb), iotest.ErrReader(boom)),
		"once, in the window": io.MultiReader(strings.NewReader(unb), &failOnce{boom}),
		"empty but failing":   &failOnce{boom},
		"after it":            io.MultiReader(strings.NewReader(unb+strings.Repeat("FTX+AAI+++padding'", 8000)), iotest.ErrReader(boom)),
		"x12 after it":        io.MultiReader(strings.NewReader("ISA*00*          *00*          *ZZ*SENDER         *ZZ*RECEIVER       *200101*1200*^*00501*000000001*0*P*:~GS*IN*S*R*20200101*1200*1*X*005010~ST*810*0001~"+strings.Repeat("N1*ST*padding~", 8000)), iotest.ErrReader(boom)),
	} {
		if _, err := Keys(r); !errors.Is(err, boom) {
			t.Errorf("%s: Keys = %v, want the read error", name, err)
		}
	}
}
