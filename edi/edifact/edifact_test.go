package edifact

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func parseOne(t *testing.T, in string) *Interchange {
	t.Helper()
	ics, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(ics) != 1 {
		t.Fatalf("Parse: %d interchanges, want 1", len(ics))
	}
	return ics[0]
}

func TestKeyBySyntaxVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     []string
	}{
		{"v1 no UNA", "UNB+UNOA:1+SENDER:14+RECIP:ZZ+991006:1902+REF1'UNH+1+INVOIC:D:97A:UN'UNT+2+1'UNZ+1+REF1'",
			[]string{"SENDER", "14", "RECIP", "ZZ", "REF1", ""}},
		{"v2 UNA", "UNA:+.? 'UNB+UNOB:2+S+R+990802:1557+R2'UNH+1+X:D:93A:UN'UNT+2+1'UNZ+1+R2'",
			[]string{"S", "", "R", "", "R2", ""}},
		{"v3 test indicator", "UNB+UNOC:3+S:1+R:1+010502:1237+R3+++I+0+EANCOM+1'UNH+1+X:D:96A:UN'UNT+2+1'UNZ+1+R3'",
			[]string{"S", "1", "R", "1", "R3", "1"}},
		{"v4 n8 date and repetition in data", "UNA:+.?*'UNB+UNOC:4:1:7:2+S:14+R:14+20990420:1137+R4'UNH+1+X:D:03B:UN'CUX+3*1'UNT+3+1'UNZ+1+R4'",
			[]string{"S", "14", "R", "14", "R4", ""}},
		{"released separators in UNB", "UNB+UNOA:3+A?+B:C??D+R?'X+000101:0000+R?+1'UNH+1+X:D:96A:UN'UNT+2+1'UNZ+1+R?+1'",
			[]string{"A+B", "C?D", "R'X", "", "R+1", ""}},
		{"release before a non-service character", "UNA=*.? ~UNB*UNOA=3*005435656=1*006?415160=1*060515=1434*778~UNH*1*X=D=97B=UN~UNT*2*1~UNZ*1*778~",
			[]string{"005435656", "1", "006415160", "1", "778", ""}},
		{"trailing spaces trimmed, leading zeros kept", "UNB+UNOA:3+ 00S  :1 +R+000101:0000+007  '" + "UNH+1+X:D:96A:UN'UNT+2+1'UNZ+1+007'",
			[]string{" 00S", "1", "R", "", "007", ""}},
		{"lines wrapped inside UNB", "UNB+UNOA:3+S:1+R:1+060515:1434+000\r\n00000000778'UNH+1+X:D:97B:UN'UNT+2+1'UNZ+1+0\n0000000000778'",
			[]string{"S", "1", "R", "1", "00000000000778", ""}},
		{"group count", "UNB+UNOA:3+S+R+010502:1237+G1'UNG+ORDERS+S:14+R:14+010502:1237+7+UN+D:96A'UNH+1+ORDERS:D:96A:UN'UNT+2+1'UNH+2+ORDERS:D:96A:UN'UNT+2+2'UNE+2+7'UNZ+1+G1'",
			[]string{"S", "", "R", "", "G1", ""}},
		{"two groups", "UNB+UNOA:3+S+R+010502:1237+G2'UNG+ORDERS+S:14+R:14+010502:1237+7+UN+D:96A'UNH+1+ORDERS:D:96A:UN'UNT+2+1'UNE+1+7'" +
			"UNG+INVOIC+S:14+R:14+010502:1237+8+UN+D:96A'UNH+2+INVOIC:D:96A:UN'UNT+2+2'UNH+3+INVOIC:D:96A:UN'UNT+2+3'UNE+2+8'UNZ+2+G2'",
			[]string{"S", "", "R", "", "G2", ""}},
		{"three groups, one empty", "UNB+UNOA:3+S+R+010502:1237+G3'UNG+A+S+R+010502:1237+1+UN+D:96A'UNH+1+A:D:96A:UN'UNT+2+1'UNE+1+1'" +
			"UNG+B+S+R+010502:1237+2+UN+D:96A'UNE+0+2'UNG+C+S+R+010502:1237+3+UN+D:96A'UNH+1+C:D:96A:UN'UNT+2+1'UNE+1+3'UNZ+3+G3'",
			[]string{"S", "", "R", "", "G3", ""}},
		{"junk before UNA", "DOC+01=x'\r\nUNA:+.? 'UNB+UNOA:3+S+R+000101:0000+J'UNH+1+X:D:96A:UN'UNT+2+1'UNZ+1+J'",
			[]string{"S", "", "R", "", "J", ""}},
		{"byte order mark", "\xef\xbb\xbfUNB+UNOA:3+S+R+000101:0000+B'UNH+1+X:D:96A:UN'UNT+2+1'UNZ+1+B'",
			[]string{"S", "", "R", "", "B", ""}},
		{"level B information separators", "UNB\x1dUNOB\x1f1\x1dS\x1dR\x1d000101\x1f0000\x1dIS\x1cUNH\x1d1\x1dX\x1fD\x1f96A\x1fUN\x1cUNT\x1d2\x1d1\x1cUNZ\x1d1\x1dIS\x1c",
			[]string{"S", "", "R", "", "IS", ""}},
		{"control count with leading zeros", "UNB+UNOA:3+S+R+000101:0000+C'UNH+1+X:D:96A:UN'UNT+2+1'UNZ+000001+C'",
			[]string{"S", "", "R", "", "C", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ic := parseOne(t, tt.in)
			if got := ic.Key(); strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("Key() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSeparatorsAndVersion(t *testing.T) {
	t.Parallel()
	ic := parseOne(t, "UNA:+.? 'UNB+UNOA:3+S+R+000101:0000+1'UNH+1+X:D:96A:UN'UNT+2+1'UNZ+1+1'")
	if ic.Separators.Release != '?' || ic.Separators.Repetition != 0 || !ic.HasUNA || ic.Version != "3" {
		t.Errorf("v3: separators %+v, HasUNA %v, version %q", ic.Separators, ic.HasUNA, ic.Version)
	}
	ic = parseOne(t, "UNB+UNOA:4+S+R+20000101:0000+1'UNH+1+X:D:96A:UN'UNT+2+1'UNZ+1+1'")
	if ic.Separators.Repetition != '*' {
		t.Errorf("v4 without UNA: repetition %q, want '*'", ic.Separators.Repetition)
	}
	ic = parseOne(t, "UNA:+.?*'UNB+IATA:1+S+R+000101:0000+1'UNH+1+X:D:96A:UN'UNT+2+1'UNZ+1+1'")
	if ic.Separators.Repetition != 0 {
		t.Errorf("v1 with UNA5 '*': repetition %q, want none (reserved before v4)", ic.Separators.Repetition)
	}
	ic = parseOne(t, "UNA:+.  'UNB+UNOA:2+S?+R+000101:0000+1'UNH+1+X:D:96A:UN'UNT+2+1'UNZ+1+1'")
	if ic.Separators.Release != 0 || ic.Sender.ID != "S?" {
		t.Errorf("UNA4 space: release %q, sender %q; want no release character and a literal '?'", ic.Separators.Release, ic.Sender.ID)
	}
	if got := (Separators{':', '+', '.', 0, 0, '\''}).UNA(); got != "UNA:+.  '" {
		t.Errorf("UNA() = %q", got)
	}
}

func TestSeveralInterchanges(t *testing.T) {
	t.Parallel()
	in := "UNA:+.? 'UNB+UNOA:3+S+R+000101:0000+1'UNH+1+X:D:96A:UN'UNT+2+1'UNZ+1+1'\r\n" +
		"UNA=*.? ~UNB*UNOA=3*S*R*000101=0000*2~UNH*1*X=D=96A=UN~UNT*2*1~UNZ*1*2~\r\n" +
		"UNB+UNOA:3+S+R+000101:0000+3'UNH+1+X:D:96A:UN'UNT+2+1'UNZ+1+3'\n\x1a"
	r := NewReader(strings.NewReader(in))
	var refs []string
	var offs []int64
	for {
		ic, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		refs, offs = append(refs, ic.ControlRef), append(offs, ic.Offset)
	}
	if strings.Join(refs, ",") != "1,2,3" || offs[1] != 73 || offs[2] != 146 {
		t.Errorf("refs %v offsets %v", refs, offs)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("Next after the end: %v, want io.EOF", err)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	const unb = "UNB+UNOA:3+S+R+000101:0000+REF'"
	const msg = "UNH+1+X:D:96A:UN'UNT+2+1'"
	const (
		lu = int64(len(unb))
		lm = int64(len(msg))
		ug = "UNG+X+S+R+000101:0000+G+UN+D:96A'"
		lg = int64(len(ug))
	)
	tests := []struct {
		name, in        string
		seg, elem, want string
		off             int64
	}{
		{"UNZ count mismatch", unb + msg + msg + "UNZ+3+REF'", "UNZ", "0036", "control count 3 does not match 2 messages", lu + 2*lm},
		{"UNZ count not a number", unb + msg + "UNZ+x+REF'", "UNZ", "0036", `control count "x" is not a number`, lu + lm},
		{"UNZ reference mismatch", unb + msg + "UNZ+1+OTHER'", "UNZ", "0020", `interchange control reference "OTHER" does not match "REF" in the UNB at byte 0`, lu + lm},
		{"UNZ count with groups", unb + ug + msg + "UNE+1+G'UNZ+2+REF'", "UNZ", "0036", "control count 2 does not match 1 group", lu + lg + lm + 8},
		{"truncated: no UNZ", unb + msg, "UNZ", "", `missing: input ends before the UNZ of interchange "REF" (UNB at byte 0): the interchange is truncated`, lu + lm},
		{"truncated inside a segment", unb + "UNH+1+X:D:96A:UN'BGM+380", "BGM", "", "input ends inside the segment (no segment terminator '): the interchange is truncated", lu + 17},
		{"truncated inside a message", unb + "UNH+1+X:D:96A:UN'", "UNZ", "", `message "1" (UNH at byte 31) has no UNT: the interchange is truncated`, lu + 17},
		{"no UNB", "BGM+380+1'DTM+137:20000101:102'", "UNB", "", "no interchange: no UNA or UNB segment in the first 31 bytes", 0},
		{"empty input", " \r\n", "UNB", "", "no interchange: the input is empty", 3},
		{"UNA without UNB", "UNA:+.? 'UNH+1+X'", "UNB", "", "no interchange: no UNA or UNB segment", 0},
		{"UNA followed by another segment", unb + msg + "UNZ+1+REF'UNA:+.? 'UNH+1'", "UNB", "", `expected UNB after the UNA at byte 66, found "UNH"`, lu + lm + 19},
		{"UNA truncated", "UNA:+.", "UNB", "", "no interchange", 0},
		{"UNA duplicate separator", "UNA::.? 'UNB:UNOA:3:S:R:000101:0000:1'UNZ:0:1'", "UNA", "", "UNA1 component separator and UNA2 data element separator are both :", 0},
		{"UNA letter separator", "UNA:+.?X'UNB+UNOA:4+S+R+000101:0000+1'UNZ+0+1'", "UNA", "", `UNA5 repetition separator is 'X': a letter or digit cannot be a service character`, 0},
		{"UNB without control reference", "UNB+UNOA:3+S+R+000101:0000'UNZ+0+'", "UNB", "0020", "interchange control reference is missing or empty", 0},
		{"UNB without sender", "UNB+UNOA:3++R+000101:0000+1'UNZ+0+1'", "UNB", "S002/0004", "sender identification is missing or empty", 0},
		{"UNB without terminator", "UNB+UNOA:3+S+R+000101:0000+1", "UNB", "", "input ends inside the segment (no segment terminator ')", 0},
		{"UNH without UNT", unb + "UNH+1+X:D:96A:UN'UNH+2+X:D:96A:UN'UNT+2+2'UNZ+2+REF'", "UNH", "", `message "1" (UNH at byte 31) has no UNT`, lu + 17},
		{"UNT reference mismatch", unb + "UNH+1+X:D:96A:UN'UNT+2+9'UNZ+1+REF'", "UNT", "0062", `message reference "9" does not match "1" in the UNH at byte 31`, lu + 17},
		{"UNH without reference", unb + "UNH++X:D:96A:UN'UNT+2+'UNZ+1+REF'", "UNH", "0062", "message reference number is missing or empty", lu},
		{"segment outside a message", unb + "BGM+380'UNZ+0+REF'", "BGM", "", "segment is outside a message (expected UNH, UNG, UNE or UNZ)", lu},
		{"groups and messages mixed", unb + ug + msg + "UNE+1+G'" + msg + "UNZ+2+REF'", "UNH", "", "groups and messages mixed", lu + lg + lm + 8},
		{"message then group", unb + msg + ug + msg + "UNE+1+G'UNZ+2+REF'", "UNG", "", "groups and messages mixed: UNG after a message outside any group", lu + lm},
		{"UNE count mismatch", unb + ug + msg + "UNE+2+G'UNZ+1+REF'", "UNE", "0060", "control count 2 does not match 1 message", lu + lg + lm},
		{"UNE reference mismatch", unb + ug + msg + "UNE+1+H'UNZ+1+REF'", "UNE", "0048", `group reference "H" does not match "G" in the UNG at byte 31`, lu + lg + lm},
		{"UNG without UNE", unb + ug + msg + "UNZ+1+REF'", "UNZ", "", `group "G" (UNG at byte 31) has no UNE`, lu + lg + lm},
		{"UNE without UNG", unb + msg + "UNE+1+G'UNZ+1+REF'", "UNE", "", "UNE without a UNG", lu + lm},
		{"second UNB before UNZ", unb + msg + unb, "UNB", "", `interchange "REF" (UNB at byte 0) has no UNZ`, lu + lm},
		{"packages", unb + "UNO+1'UNP+1'UNZ+1+REF'", "UNO", "", "packages (UNO…UNP, syntax version 4 part 8) are not supported", lu},
		{"junk after UNZ", unb + msg + "UNZ+1+REF'\nBGM+1'", "", "", `unexpected data "BGM+1'" after UNZ`, lu + lm + 11},
		{"service segment too long", "UNB+UNOA:3+" + strings.Repeat("S", 5000) + "'", "UNB", "", "segment longer than 4096 bytes", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ics, err := Parse(strings.NewReader(tt.in))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse = %v, %v; want a *SyntaxError", ics, err)
			}
			if ics != nil {
				t.Errorf("Parse returned interchanges with the error")
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
	_, err := Parse(strings.NewReader("UNB+UNOA:3+S+R+000101:0000+REF'UNH+1+X'UNT+2+1'UNH+2+X'UNT+2+2'UNZ+3+REF'"))
	want := "edifact: UNZ element 0036 at byte 63: control count 3 does not match 2 messages"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
	e := &SyntaxError{Segment: "H`x", Offset: 4, Msg: "m"}
	if got := e.Error(); got != "edifact: \"H`x\" at byte 4: m" {
		t.Errorf("odd tag: %s", got)
	}
	e = &SyntaxError{Offset: 4, Msg: "m"}
	if got := e.Error(); got != "edifact: at byte 4: m" {
		t.Errorf("no segment: %s", got)
	}
}

func TestFindStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int
	}{
		{"UNB+", 0}, {"x'UNB+", 2}, {"XUNB+", -1}, {"UNBX", -1}, {"UNA:+.? 'UNB+", 0},
		{"UNA:+.? '\r\n UNB+", 0}, {"UNA:+.? 'BGM+", -1}, {"UN", -1}, {"", -1}, {"aUNA:+.? 'UNB+", 10},
	}
	for _, tt := range tests {
		if got := FindStart([]byte(tt.in)); got != tt.want {
			t.Errorf("FindStart(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestField(t *testing.T) {
	t.Parallel()
	s := DefaultSeparators
	raw := []byte("UNH+1?+2+X:D?:Y:96A+")
	for _, tc := range []struct {
		e, c int
		want string
	}{{0, 0, "UNH"}, {1, 0, "1+2"}, {2, 0, "X"}, {2, 1, "D:Y"}, {2, 2, "96A"}, {2, 3, ""}, {3, 0, ""}, {9, 0, ""}} {
		if got, split := field(raw, s, tc.e, tc.c), value(split(raw, s), tc.e, tc.c); got != tc.want || split != tc.want {
			t.Errorf("field(%d,%d) = %q, split = %q, want %q", tc.e, tc.c, got, split, tc.want)
		}
	}
}
