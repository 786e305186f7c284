package edifact

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/txinbox/txinbox/edi/internal/testsamples"
)

// TestLargeInterchange feeds generated interchanges of 200 MB (20 MB under
// the race detector) and checks the envelope is read with bounded memory:
// the input is streamed, never held.
func TestLargeInterchange(t *testing.T) {
	if testing.Short() {
		t.Skip("large input: skipped with -short")
	}
	size := testsamples.LargeSize()
	const head = "UNA:+.? 'UNB+UNOC:3+SENDER:14+RECIPIENT:14+200101:1200+BIG'\r\n"
	t.Run("many messages", func(t *testing.T) {
		body := []byte("UNH+1+INVOIC:D:96A:UN'BGM+380+1'FTX+AAI+++" + string(bytes.Repeat([]byte("text ?' x "), 12)) + "'UNT+4+1'\r\n")
		n := size / int64(len(body))
		tail := fmt.Sprintf("UNZ+%d+BIG'", n)
		checkLarge(t, testsamples.Repeat([]byte(head), body, []byte(tail), n), n, 1<<20)
	})
	t.Run("one huge segment", func(t *testing.T) {
		body := bytes.Repeat([]byte("0123456789?'?+?:??"), 4096)
		n := size / int64(len(body))
		checkLarge(t, testsamples.Repeat([]byte(head+"UNH+1+INVOIC:D:96A:UN'FTX+AAI+++"), body, []byte("'UNT+3+1'UNZ+1+BIG'"), n), 1, 1<<20)
	})
}

func checkLarge(t *testing.T, r interface{ Read([]byte) (int, error) }, messages int64, maxAlloc uint64) {
	t.Helper()
	var (
		ics []*Interchange
		err error
	)
	mem := testsamples.Measure(func() { ics, err = Parse(r) })
	if err != nil {
		t.Fatal(err)
	}
	if len(ics) != 1 || ics[0].ControlRef != "BIG" || int64(ics[0].Messages) != messages {
		t.Fatalf("got %d interchanges, first %+v", len(ics), ics[0])
	}
	t.Logf("%d bytes: peak heap %d KiB, allocated %d KiB", ics[0].End, mem.PeakHeap>>10, mem.TotalAlloc>>10)
	if mem.PeakHeap > 32<<20 {
		t.Errorf("peak heap %d MiB, want < 32 MiB", mem.PeakHeap>>20)
	}
	if mem.TotalAlloc > maxAlloc {
		t.Errorf("allocated %d KiB, want < %d KiB", mem.TotalAlloc>>10, maxAlloc>>10)
	}
}
