package ebms

import (
	"bytes"
	"io"
	"testing"

	"github.com/txinbox/txinbox/edi/internal/testsamples"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestLargeMessages checks AS4 messages with 200 MB of payload (20 MB under
// the race detector) are read with bounded memory: an attachment before the
// root part is skipped by streaming, a payload after the header is not read.
func TestLargeMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("large input: skipped with -short")
	}
	size := testsamples.LargeSize()
	chunk := bytes.Repeat([]byte("\x00\xffbinary--b\r\n--not-the-boundary\r\n"), 1024)
	n := size / int64(len(chunk))
	bare := env12(messaging(userMessage), "")
	tests := []struct {
		name           string
		head, tail, ct string
		mustReadAll    bool
	}{
		{"attachment before the root part", "--b\r\nContent-ID: <att>\r\n\r\n",
			"\r\n--b\r\nContent-Type: application/soap+xml\r\nContent-ID: <root>\r\n\r\n" + bare + "\r\n--b--\r\n",
			`multipart/related; boundary=b; start="<root>"`, true},
		{"attachment after the root part", "--b\r\nContent-Type: application/soap+xml\r\n\r\n" + bare + "\r\n--b\r\n\r\n",
			"\r\n--b--\r\n", "multipart/related; boundary=b", false},
		{"large SOAP body", bare[:len(bare)-len("</S12:Body></S12:Envelope>")] + "<data>", "</data></S12:Body></S12:Envelope>", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := &countingReader{r: testsamples.Repeat([]byte(tt.head), chunk, []byte(tt.tail), n)}
			var (
				m   *Message
				err error
			)
			mem := testsamples.Measure(func() { m, err = Parse(cr, tt.ct) })
			if err != nil {
				t.Fatal(err)
			}
			if m.MessageID != "id-1@sender" {
				t.Errorf("MessageID %q", m.MessageID)
			}
			t.Logf("read %d bytes: peak heap %d KiB, allocated %d KiB", cr.n, mem.PeakHeap>>10, mem.TotalAlloc>>10)
			if tt.mustReadAll != (cr.n > size/2) {
				t.Errorf("read %d of about %d bytes", cr.n, size)
			}
			if mem.PeakHeap > 32<<20 || mem.TotalAlloc > 8<<20 {
				t.Errorf("peak heap %d KiB, allocated %d KiB; want < 32 MiB and < 8 MiB", mem.PeakHeap>>10, mem.TotalAlloc>>10)
			}
		})
	}
}
