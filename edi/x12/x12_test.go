package x12

import (
	"errors"
	"strings"
	"testing"
)

// isa builds a valid ISA with the given control number, usage indicator
// and terminator.
func isa(ctrl, usage, term string) string {
	return "ISA*00*          *00*          *ZZ*SENDER         *01*RECEIVER       *200101*1200*^*00501*" + ctrl + "*0*" + usage + "*:" + term
}

const group = "GS*FA*S*R*20200101*1200*7*X*005010~ST*997*0001~AK9*A*1*1*1~SE*3*0001~GE*1*7~"

func TestKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     [][]string
	}{
		{"one", isa("000000001", "P", "~") + "\n" + group + "IEA*1*000000001~\n",
			[][]string{{"ZZ", "SENDER", "01", "RECEIVER", "000000001", "P"}}},
		{"several, test usage", isa("000000001", "T", "~") + group + "IEA*1*000000001~\r\n" + isa("000000002", "P", "~") + group + "IEA*1*000000002~",
			[][]string{{"ZZ", "SENDER", "01", "RECEIVER", "000000001", "T"}, {"ZZ", "SENDER", "01", "RECEIVER", "000000002", "P"}}},
		{"newline terminator, indented", strings.ReplaceAll(isa("000000003", "P", "\n")+group+"IEA*1*000000003~", "~", "\n  "),
			[][]string{{"ZZ", "SENDER", "01", "RECEIVER", "000000003", "P"}}},
		{"multi-byte terminator", strings.ReplaceAll(isa("000000004", "P", "~")+group+"IEA*1*000000004~", "~", "…"),
			[][]string{{"ZZ", "SENDER", "01", "RECEIVER", "000000004", "P"}}},
		{"ISA wrapped at 80 columns", func() string { s := isa("000000005", "P", "~"); return s[:80] + "\r\n" + s[80:] }() + group + "IEA*1*000000005~",
			[][]string{{"ZZ", "SENDER", "01", "RECEIVER", "000000005", "P"}}},
		{"TA1 only", isa("000000006", "P", "~") + "TA1*000000050*200229*1200*A*000~IEA*1*000000006~",
			[][]string{{"ZZ", "SENDER", "01", "RECEIVER", "000000006", "P"}}},
		{"binary segment holding the terminator", isa("000000007", "P", "~") + "GS*FA*S*R*20200101*1200*7*X*005010~ST*997*0001~BIN*5*a~b~c~SE*3*0001~GE*1*7~IEA*1*000000007~",
			[][]string{{"ZZ", "SENDER", "01", "RECEIVER", "000000007", "P"}}},
		{"BDS segment", isa("000000008", "P", "~") + "GS*FA*S*R*20200101*1200*7*X*005010~ST*997*0001~BDS*ASC*3*~~~~SE*3*0001~GE*1*7~IEA*1*000000008~",
			[][]string{{"ZZ", "SENDER", "01", "RECEIVER", "000000008", "P"}}},
		{"ISB and ISE", isa("000000009", "P", "~") + "ISB*1~ISE*200601*0515*04~" + group + "IEA*1*000000009~",
			[][]string{{"ZZ", "SENDER", "01", "RECEIVER", "000000009", "P"}}},
		{"byte order mark and trailing ^Z", "\xef\xbb\xbf" + isa("000000010", "P", "~") + group + "IEA*1*000000010~\x1a",
			[][]string{{"ZZ", "SENDER", "01", "RECEIVER", "000000010", "P"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ics, err := Parse(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(ics) != len(tt.want) {
				t.Fatalf("%d interchanges, want %d", len(ics), len(tt.want))
			}
			for i, ic := range ics {
				if got := strings.Join(ic.Key(), "|"); got != strings.Join(tt.want[i], "|") {
					t.Errorf("interchange %d: key %q, want %q", i, ic.Key(), tt.want[i])
				}
			}
		})
	}
}

func TestSeparators(t *testing.T) {
	t.Parallel()
	ics, err := Parse(strings.NewReader(strings.ReplaceAll(isa("000000001", "P", "~")+group+"IEA*1*000000001~", "~", "…")))
	if err != nil {
		t.Fatal(err)
	}
	s := ics[0].Separators
	if s.Element != '*' || s.Component != ':' || s.Repetition != '^' || s.Segment != "…" {
		t.Errorf("separators %+v", s)
	}
	if ics[0].Groups != 1 || ics[0].Sets != 1 || ics[0].Version != "00501" {
		t.Errorf("counts %+v", ics[0])
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	ok := isa("000000001", "P", "~")
	lo := int64(len(ok))
	tests := []struct {
		name, in        string
		seg, elem, want string
		off             int64
	}{
		{"ISA too short", ok[:60], "ISA", "", "too short: input ends after 60 of the 106 characters", 0},
		{"ISA without terminator", ok[:105], "ISA", "", "input ends before the segment terminator", 0},
		{"ISA element of wrong width", strings.Replace(ok, "SENDER         ", "SENDER", 1) + strings.Repeat(" ", 20), "ISA", "ISA06", "wrong width: expected the data element separator * at character 51", 0},
		{"ISA blank sender", strings.Replace(ok, "SENDER         ", "               ", 1), "ISA", "ISA06", "interchange sender id is blank", 0},
		{"ISA component separator equals element separator", strings.Replace(ok, "*:~", "**~", 1), "ISA", "ISA16", "component separator * must differ", 0},
		{"ISA letter as separator", strings.ReplaceAll(ok, "*", "X"), "ISA", "", "must not be a letter, digit or space", 0},
		{"not ISA", "GS*FA~", "ISA", "", `no interchange: input starts with "GS*FA~", not ISA`, 0},
		{"empty", "\n", "ISA", "", "the input is empty", 1},
		{"IEA count mismatch", ok + group + "IEA*2*000000001~", "IEA", "IEA01", "count 2 does not match 1 functional group", lo + int64(len(group))},
		{"IEA count not a number", ok + group + "IEA*x*000000001~", "IEA", "IEA01", `count "x" is not a number`, lo + int64(len(group))},
		{"IEA control number mismatch", ok + group + "IEA*1*000000002~", "IEA", "IEA02", `interchange control number "000000002" does not match "000000001" in the ISA at byte 0`, lo + int64(len(group))},
		{"no IEA", ok + group, "IEA", "", "missing: input ends before the IEA", lo + int64(len(group))},
		{"truncated inside a segment", ok + "GS*FA*S", "GS", "", "input ends inside the segment", lo},
		{"GE count mismatch", ok + "GS*FA*S*R*1*1*7*X*5~ST*997*1~SE*1*1~GE*2*7~IEA*1*000000001~", "GE", "GE01", "count 2 does not match 1 transaction set", lo + 36},
		{"GE control number mismatch", ok + "GS*FA*S*R*1*1*7*X*5~GE*0*8~IEA*1*000000001~", "GE", "GE02", `group control number "8" does not match "7"`, lo + 20},
		{"SE control number mismatch", ok + "GS*FA*S*R*1*1*7*X*5~ST*997*1~SE*1*2~GE*1*7~IEA*1*000000001~", "SE", "SE02", `transaction set control number "2" does not match "1"`, lo + 29},
		{"ST without SE", ok + "GS*FA*S*R*1*1*7*X*5~ST*997*1~GE*1*7~IEA*1*000000001~", "GE", "", `transaction set "1" (ST at byte 126) has no SE`, lo + 29},
		{"GS without GE", ok + "GS*FA*S*R*1*1*7*X*5~IEA*1*000000001~", "IEA", "", `group "7" (GS at byte 106) has no GE`, lo + 20},
		{"ST outside a group", ok + "ST*997*1~SE*1*1~IEA*0*000000001~", "ST", "", "transaction set outside a functional group", lo},
		{"segment outside a group", ok + "AK9*A~IEA*0*000000001~", "AK9", "", "segment AK9 is outside a functional group (GS…GE)", lo},
		{"second ISA before IEA", ok + group + ok, "ISA", "", `interchange "000000001" (ISA at byte 0) has no IEA`, lo + int64(len(group))},
		{"junk after IEA", ok + group + "IEA*1*000000001~GS~", "", "", `unexpected data "GS~" after IEA`, lo + int64(len(group)) + 16},
		{"binary length not a number", ok + "GS*FA*S*R*1*1*7*X*5~ST*997*1~BIN*x*~SE*1*1~GE*1*7~IEA*1*000000001~", "BIN", "BIN01", `binary data length "x" is not a number`, lo + 29},
		{"binary data too short", ok + "GS*FA*S*R*1*1*7*X*5~ST*997*1~BIN*2*abc~SE*1*1~GE*1*7~IEA*1*000000001~", "BIN", "BIN01", "binary data of 2 bytes is not followed by the segment terminator", lo + 29},
		{"service segment too long", ok + "GS*" + strings.Repeat("x", 5000) + "~", "GS", "", "segment longer than 4096 bytes", lo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ics, err := Parse(strings.NewReader(tt.in))
			var se *SyntaxError
			if !errors.As(err, &se) || ics != nil {
				t.Fatalf("Parse = %v, %v; want only a *SyntaxError", ics, err)
			}
			if se.Segment != tt.seg || se.Element != tt.elem || !strings.Contains(se.Msg, tt.want) || se.Offset != tt.off {
				t.Errorf("got %s (segment %q element %q offset %d)\nwant segment %q element %q offset %d msg containing %q",
					err, se.Segment, se.Element, se.Offset, tt.seg, tt.elem, tt.off, tt.want)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := Parse(strings.NewReader(isa("000000001", "P", "~") + group + "IEA*1*000000002~"))
	want := `x12: IEA element IEA02 at byte 182: interchange control number "000000002" does not match "000000001" in the ISA at byte 0`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
	if got := (&SyntaxError{Segment: "a\x00", Offset: 1, Msg: "m"}).Error(); got != `x12: "a\x00" at byte 1: m` {
		t.Errorf("odd tag: %s", got)
	}
}
