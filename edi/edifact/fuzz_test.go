package edifact

import (
	"bytes"
	"errors"
	"testing"
	"testing/iotest"

	"github.com/txinbox/txinbox/edi/internal/testsamples"
)

func FuzzEdifact(f *testing.F) {
	for _, s := range testsamples.Seeds("pydifact/", "staedi/edifact/", "smooks/") {
		f.Add(s)
	}
	for _, s := range []string{
		"UNA:+.? 'UNB+UNOA:3+S:1+R:1+000101:0000+1'UNH+1+X:D:96A:UN'UNT+2+1'UNZ+1+1'",
		"UNB+UNOA:4+S+R+20000101:0000+1'UNG+X+S+R+000101:0000+G+UN+D:96A'UNH+1+X'UNT+2+1'UNE+1+G'UNZ+1+1'",
		"UNA=*.? ~UNB*UNOA=3*S?*=1*R*000101=0000*1~UNH*1*X~UNT*2*1~UNZ*1*1~\nUNB+UNOA:3+S+R+0:0+2'UNH+1+X'UNT+2+1'UNZ+1+2'",
		"UNB\x1dUNOB\x1f1\x1dS\x1dR\x1d0\x1f0\x1d1\x1cUNZ\x1d0\x1d1\x1c",
		"UNB+UNOA:3+S+R+0:0+1'UNH+1?'+X'FTX+a?",
		"UNB+UNOC:3+S+R+0:0+1'UNG+A+S+R+0:0+1+UN+D:96A'UNH+1+X'UNT+2+1'UNE+1+1'UNG+B+S+R+0:0+2+UN+D:96A'UNH+2+X'UNT+2+2'UNE+1+2'UNZ+2+1'",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ics, err := Parse(bytes.NewReader(data))
		checkResult(t, data, ics, err)
		// The result must not depend on how the input is split into reads.
		ics2, err2 := Parse(iotest.OneByteReader(bytes.NewReader(data)))
		if (err == nil) != (err2 == nil) || len(ics) != len(ics2) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("one-byte reads differ: %v / %v", err, err2)
		}
		for i := range ics {
			if ics[i].End != ics2[i].End || ics[i].ControlRef != ics2[i].ControlRef {
				t.Fatalf("interchange %d differs with one-byte reads", i)
			}
		}
	})
}

func checkResult(t *testing.T, data []byte, ics []*Interchange, err error) {
	t.Helper()
	if err != nil {
		var se *SyntaxError
		if ics != nil || !errors.As(err, &se) {
			t.Fatalf("error %v (%T) with %d interchanges", err, err, len(ics))
		}
		if se.Offset < 0 || se.Offset > int64(len(data)) || se.Msg == "" {
			t.Fatalf("bad error position or message: %+v", se)
		}
		return
	}
	if len(ics) == 0 {
		t.Fatal("no error and no interchange")
	}
	prev := int64(-1)
	for _, ic := range ics {
		if ic.Offset <= prev || ic.End <= ic.Offset || ic.End > int64(len(data)) {
			t.Fatalf("bad offsets %d..%d after %d (input %d bytes)", ic.Offset, ic.End, prev, len(data))
		}
		if ic.Sender.ID == "" || ic.Recipient.ID == "" || ic.ControlRef == "" {
			t.Fatalf("empty key value: %q", ic.Key())
		}
		if !bytes.HasPrefix(data[ic.Offset:], []byte("UNA")) && !bytes.HasPrefix(data[ic.Offset:], []byte("UNB")) {
			t.Fatalf("interchange offset %d does not point at UNA or UNB", ic.Offset)
		}
		prev = ic.Offset
	}
}
