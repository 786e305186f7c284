package x12

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/txinbox/txinbox/edi/internal/testsamples"
)

// TestLargeInterchange feeds generated interchanges of 200 MB (20 MB under
// the race detector) and checks they are read with bounded memory.
func TestLargeInterchange(t *testing.T) {
	if testing.Short() {
		t.Skip("large input: skipped with -short")
	}
	size := testsamples.LargeSize()
	head := isa("000000001", "P", "~") + "\r\nGS*IN*S*R*20200101*1200*1*X*004010~"
	t.Run("many transaction sets", func(t *testing.T) {
		body := []byte("ST*810*0001~BIG*20200101*1~" + string(bytes.Repeat([]byte("N1*ST*NAME*9*123~"), 10)) + "SE*13*0001~\r\n")
		n := size / int64(len(body))
		tail := fmt.Sprintf("GE*%d*1~IEA*1*000000001~", n)
		checkLarge(t, testsamples.Repeat([]byte(head), body, []byte(tail), n), n)
	})
	t.Run("one huge binary segment", func(t *testing.T) {
		chunk := bytes.Repeat([]byte("~~binary~~"), 6554)
		n := size / int64(len(chunk))
		bin := fmt.Sprintf("ST*999*1~BIN*%d*", n*int64(len(chunk)))
		checkLarge(t, testsamples.Repeat([]byte(head+bin), chunk, []byte("~SE*3*1~GE*1*1~IEA*1*000000001~"), n), 1)
	})
}

func checkLarge(t *testing.T, r io.Reader, sets int64) {
	t.Helper()
	var (
		ics []*Interchange
		err error
	)
	mem := testsamples.Measure(func() { ics, err = Parse(r) })
	if err != nil {
		t.Fatal(err)
	}
	if len(ics) != 1 || int64(ics[0].Sets) != sets {
		t.Fatalf("got %d interchanges, first %+v", len(ics), ics[0])
	}
	t.Logf("%d bytes: peak heap %d KiB, allocated %d KiB", ics[0].End, mem.PeakHeap>>10, mem.TotalAlloc>>10)
	if mem.PeakHeap > 32<<20 {
		t.Errorf("peak heap %d MiB, want < 32 MiB", mem.PeakHeap>>20)
	}
	if mem.TotalAlloc > 1<<20 {
		t.Errorf("allocated %d KiB, want < 1 MiB: nothing per segment", mem.TotalAlloc>>10)
	}
}
