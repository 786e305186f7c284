package x12

import (
	"bytes"
	"errors"
	"testing"
	"testing/iotest"

	"github.com/txinbox/txinbox/edi/internal/testsamples"
)

func FuzzX12(f *testing.F) {
	for _, s := range testsamples.Seeds("staedi/x12/") {
		f.Add(s)
	}
	for _, s := range []string{
		isa("000000001", "P", "~") + group + "IEA*1*000000001~",
		isa("000000002", "T", "…") + "GS*FA*S*R*1*1*7*X*5…ST*997*1…BIN*3*…x…SE*1*1…GE*1*7…IEA*1*000000002…",
		isa("000000003", "P", "\n") + "TA1*1*2*3*A*000\nIEA*1*000000003\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ics, err := Parse(bytes.NewReader(data))
		checkResult(t, data, ics, err)
		ics2, err2 := Parse(iotest.OneByteReader(bytes.NewReader(data)))
		if (err == nil) != (err2 == nil) || len(ics) != len(ics2) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("one-byte reads differ: %v / %v", err, err2)
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
		if ic.Offset <= prev || ic.End <= ic.Offset || ic.End > int64(len(data)) || !bytes.HasPrefix(data[ic.Offset:], []byte("ISA")) {
			t.Fatalf("bad offsets %d..%d after %d (input %d bytes)", ic.Offset, ic.End, prev, len(data))
		}
		if ic.Sender.ID == "" || ic.Receiver.ID == "" || ic.ControlNumber == "" {
			t.Fatalf("empty key value: %q", ic.Key())
		}
		prev = ic.Offset
	}
}
