package as4_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/as4"
)

const gzipProps = `<eb:Property name="MimeType">application/xml</eb:Property><eb:Property name="CompressionType">application/gzip</eb:Property>`

// TestCompressedPayloadDelivered: a gzip payload is stored and delivered
// decompressed, with its MimeType; a resend compressed differently is a
// duplicate.
func TestCompressedPayloadDelivered(t *testing.T) {
	backends(t, options{}, func(t *testing.T, e *endpoint) {
		doc := strings.Repeat("<Invoice>42</Invoice>", 100)
		m := userMessage{id: newID(), from: "sender", payloads: [][]byte{gzipped(doc)}, partProperties: gzipProps}
		body, ct := m.mime(false)
		wantReceipt(t, post(t, e.url, ct, body), m.id)
		rec := e.delivered.Load()
		if rec == nil || len(rec.Parts) != 1 {
			t.Fatalf("delivered %+v", rec)
		}
		if p := rec.Parts[0]; string(p.Data) != doc || !p.Compressed || p.MimeType() != "application/xml" {
			t.Errorf("delivered part: compressed %v, MimeType %q, %d bytes %.40q", p.Compressed, p.MimeType(), len(p.Data), p.Data)
		}
		if n := e.count(t, "SELECT count(*) FROM txinbox_as4_payloads WHERE data = $1 AND mime_type = 'application/xml' AND compression_type = 'application/gzip'", []byte(doc)); n != 1 {
			t.Errorf("%d payload rows with the decompressed data, want 1", n)
		}
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
		zw.Name = "other header, other bytes"
		zw.Write([]byte(doc))
		zw.Close()
		m.payloads = [][]byte{b.Bytes()}
		body, ct = m.mime(false)
		wantReceipt(t, post(t, e.url, ct, body), m.id)
		if n := e.deliveries.Load(); n != 1 {
			t.Errorf("%d deliveries, want 1 (the resend is a duplicate)", n)
		}
	})
}

// TestBrokenCompression: gzip that is truncated, followed by garbage, not
// gzip, or declared without MimeType gets EBMS:0303 and no receipt.
func TestBrokenCompression(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{})
	good := gzipped(strings.Repeat("<a/>", 1000))
	cases := map[string]struct {
		data  []byte
		props string
	}{
		"truncated":       {good[:len(good)-5], gzipProps},
		"truncated-deep":  {good[:len(good)/2], gzipProps},
		"bad-crc":         {append(append([]byte{}, good[:len(good)-8]...), 0, 0, 0, 0, 0, 0, 0, 0), gzipProps},
		"trailing-junk":   {append(append([]byte{}, good...), "junk"...), gzipProps},
		"not-gzip":        {[]byte("<a/>"), gzipProps},
		"gzip-magic-only": {[]byte{0x1f, 0x8b}, gzipProps},
		"no-mimetype":     {good, `<eb:Property name="CompressionType">application/gzip</eb:Property>`},
		"other-type":      {good, `<eb:Property name="MimeType">application/xml</eb:Property><eb:Property name="CompressionType">application/x-bzip2</eb:Property>`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m := userMessage{id: newID(), from: "sender", payloads: [][]byte{c.data}, partProperties: c.props}
			body, ct := m.mime(false)
			wantRefused(t, e, post(t, e.url, ct, body), http.StatusBadRequest, as4.DecompressionFailure, m.id)
		})
	}
}

// bombReader streams a gzip bomb: n copies of one gzip member of 1 MiB of
// zeros (about 1 KiB each), inside a multipart message.
type bombReader struct {
	head, member, tail []byte
	n                  int
	pos                int // in the current piece
	piece              int // 0 head, 1..n members, n+1 tail
}

func (b *bombReader) Read(p []byte) (int, error) {
	for {
		var cur []byte
		switch {
		case b.piece == 0:
			cur = b.head
		case b.piece <= b.n:
			cur = b.member
		case b.piece == b.n+1:
			cur = b.tail
		default:
			return 0, io.EOF
		}
		if b.pos < len(cur) {
			k := copy(p, cur[b.pos:])
			b.pos += k
			return k, nil
		}
		b.piece, b.pos = b.piece+1, 0
	}
}

// TestGzipBombRefused: a 40 GiB gzip bomb (40 MB on the wire, streamed by
// the test) is refused with EBMS:0303 once decompression passes the
// limit; the endpoint allocates about the body and the limit, not 40 GiB.
// It does not run in parallel: the allocation figure is the process's.
func TestGzipBombRefused(t *testing.T) {
	const limit = 8 << 20
	e := newSQLite(t, options{maxDecompressed: limit, maxBody: 64 << 20})
	var mb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&mb, gzip.BestCompression)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	m := userMessage{id: newID(), from: "sender", payloads: [][]byte{[]byte("BOMB")}, partProperties: gzipProps}
	body, ct := m.mime(false)
	head, tail, _ := bytes.Cut(body, []byte("BOMB"))
	bomb := &bombReader{head: head, member: mb.Bytes(), tail: tail, n: 40 << 10}
	t.Logf("bomb: %d members of %d bytes = %d MB on the wire, 40 GiB decompressed", bomb.n, len(bomb.member), bomb.n*len(bomb.member)>>20)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	req, err := http.NewRequest(http.MethodPost, e.url, bomb)
	must(t, err)
	req.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	must(t, err)
	runtime.ReadMemStats(&after)
	r := response{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: b}
	validateAnswer(t, r)
	wantRefused(t, e, r, http.StatusBadRequest, as4.DecompressionFailure, m.id)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("the request allocated %d MiB in the test process", alloc>>20)
	if wire := uint64(bomb.n * len(bomb.member)); alloc > 8*wire+4*limit && !as4.RaceEnabled {
		t.Errorf("%d MiB allocated for a %d MiB request and a %d MiB limit", alloc>>20, wire>>20, limit>>20)
	}
}

// TestDecompressedInFlightBounded: a message whose payloads decompress
// to more than MaxDecompressedInFlight (but within MaxDecompressedBytes)
// gets 503 with Retry-After and is not stored; one within it is stored,
// and the next one too (each request's bytes are released).
func TestDecompressedInFlightBounded(t *testing.T) {
	t.Parallel()
	e := newSQLite(t, options{maxDecompressed: 8 << 20, maxDecompressedInFlight: 2 << 20})
	gz := func(n int) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(make([]byte, n))
		zw.Close()
		return b.Bytes()
	}
	big := userMessage{id: newID(), from: "sender", payloads: [][]byte{gz(3 << 20)}, partProperties: gzipProps}
	body, ct := big.mime(false)
	r := post(t, e.url, ct, body)
	wantError(t, r, http.StatusServiceUnavailable, as4.Other)
	if r.retryAfter == "" {
		t.Error("no Retry-After")
	}
	for range 2 {
		small := userMessage{id: newID(), from: "sender", payloads: [][]byte{gz(1536 << 10)}, partProperties: gzipProps}
		body, ct = small.mime(false)
		wantReceipt(t, post(t, e.url, ct, body), small.id)
	}
	if n := e.count(t, "SELECT count(*) FROM txinbox_as4_messages"); n != 2 {
		t.Errorf("%d stored messages, want 2", n)
	}
}
