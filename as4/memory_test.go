package as4

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// hostileEnvelope returns a SOAP 1.2 user message of about size bytes:
// kind "nest" nests elements in the Body, "partinfo" repeats eb:PartInfo,
// "body" is a flat, valid payload of many small elements in the Body,
// "mime" is a valid message with one MIME attachment of size bytes.
func hostileEnvelope(kind string, size int) ([]byte, string) {
	head := `<S12:Envelope xmlns:S12="http://www.w3.org/2003/05/soap-envelope" xmlns:eb="http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/"><S12:Header><eb:Messaging S12:mustUnderstand="true"><eb:UserMessage>` +
		`<eb:MessageInfo><eb:Timestamp>2026-11-30T10:00:00Z</eb:Timestamp><eb:MessageId>mem@test</eb:MessageId></eb:MessageInfo>` +
		`<eb:PartyInfo><eb:From><eb:PartyId>a</eb:PartyId><eb:Role>r</eb:Role></eb:From><eb:To><eb:PartyId>b</eb:PartyId><eb:Role>r</eb:Role></eb:To></eb:PartyInfo>` +
		`<eb:CollaborationInfo><eb:Service>s</eb:Service><eb:Action>a</eb:Action><eb:ConversationId>c</eb:ConversationId></eb:CollaborationInfo>`
	var b strings.Builder
	b.WriteString(head)
	switch kind {
	case "nest":
		b.WriteString(`<eb:PayloadInfo><eb:PartInfo/></eb:PayloadInfo></eb:UserMessage></eb:Messaging></S12:Header><S12:Body>`)
		n := size / 7
		b.WriteString(strings.Repeat("<a><b>", n/2))
		b.WriteString(strings.Repeat("</b></a>", n/2))
		b.WriteString(`</S12:Body></S12:Envelope>`)
	case "partinfo":
		b.WriteString(`<eb:PayloadInfo>`)
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(&b, `<eb:PartInfo href="cid:p%d"/>`, i)
		}
		b.WriteString(`</eb:PayloadInfo></eb:UserMessage></eb:Messaging></S12:Header><S12:Body/></S12:Envelope>`)
	case "body":
		b.WriteString(`<eb:PayloadInfo><eb:PartInfo/></eb:PayloadInfo></eb:UserMessage></eb:Messaging></S12:Header><S12:Body><invoice>`)
		line := strings.Repeat("x", size/(DefaultMaxElements-100))
		for i := 0; i < DefaultMaxElements-100; i++ {
			b.WriteString("<l>" + line + "</l>")
		}
		b.WriteString(`</invoice></S12:Body></S12:Envelope>`)
	case "mime":
		b.WriteString(`<eb:PayloadInfo><eb:PartInfo href="cid:p"/></eb:PayloadInfo></eb:UserMessage></eb:Messaging></S12:Header><S12:Body/></S12:Envelope>`)
		env := b.String()
		var m bytes.Buffer
		m.WriteString("--B\r\nContent-Type: application/soap+xml\r\n\r\n" + env + "\r\n--B\r\nContent-ID: <p>\r\n\r\n")
		m.Write(bytes.Repeat([]byte("0123456789abcdef"), size/16))
		m.WriteString("\r\n--B--\r\n")
		return m.Bytes(), "multipart/related; boundary=B"
	}
	return []byte(b.String()), "application/soap+xml"
}

// allocatedBy returns the bytes fn allocates.
func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestRequestMemoryBounded reads hostile and valid requests of 8 MiB and
// checks that reading one allocates at most a small multiple of its size
// (before the limits, a deeply nested Body took about 55 bytes per byte).
// Under the race detector, which changes allocation, it only reports.
// The figures are in docs/as4.md; run with -v to see them.
func TestRequestMemoryBounded(t *testing.T) {
	const size = 8 << 20
	for _, tt := range []struct {
		kind   string
		refuse bool
		max    float64 // bytes allocated per byte of request
	}{{"nest", true, 0.01}, {"partinfo", true, 0.01}, {"body", false, 4}, {"mime", false, 4}} {
		body, ct := hostileEnvelope(tt.kind, size)
		var err error
		alloc := allocatedBy(func() { _, err = readRequest(body, ct, defaultLimits, securityPolicy{}) })
		per := float64(alloc) / float64(len(body))
		t.Logf("%-8s %9d bytes: %10d bytes allocated, %.2f per byte of request (err: %.80v)", tt.kind, len(body), alloc, per, err)
		if tt.refuse != (err != nil) {
			t.Errorf("%s: err = %v, want refused %v", tt.kind, err, tt.refuse)
		}
		if per > tt.max && !raceEnabled {
			t.Errorf("%s: %.2f bytes allocated per byte of request, want at most %.2f", tt.kind, per, tt.max)
		}
	}
}

// gzipBomb returns a valid message whose one payload is gzip of n zero
// bytes (about n/1000 bytes on the wire).
func gzipBomb(t testing.TB, n int64) ([]byte, string) {
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for left := n; left > 0; left -= int64(len(zero)) {
		zw.Write(zero[:min(left, int64(len(zero)))])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	body, ct := hostileEnvelope("mime", 16)
	env := strings.Replace(string(body), `<eb:PartInfo href="cid:p"/>`, `<eb:PartInfo href="cid:p"><eb:PartProperties><eb:Property name="MimeType">application/xml</eb:Property><eb:Property name="CompressionType">application/gzip</eb:Property></eb:PartProperties></eb:PartInfo>`, 1)
	i := strings.Index(env, "Content-ID: <p>\r\n\r\n") + len("Content-ID: <p>\r\n\r\n")
	return []byte(env[:i] + z.String() + "\r\n--B--\r\n"), ct
}

// TestGzipBombMemoryBounded: a payload that decompresses past the limit
// is refused (EBMS:0303) having allocated a few times its size on the
// wire, not the limit (before: the decompressed bytes up to the limit,
// in a doubling buffer, about 2.5 times the limit); one within the limit
// allocates about its decompressed size once.
func TestGzipBombMemoryBounded(t *testing.T) {
	const limit = 64 << 20
	lim := defaultLimits
	lim.decompressed = limit
	for _, tt := range []struct {
		n       int64
		refused bool
		max     uint64 // bytes allocated
	}{{4 * limit, true, 4 << 20}, {limit - 1<<20, false, limit + 8<<20}} {
		body, ct := gzipBomb(t, tt.n)
		var err error
		alloc := allocatedBy(func() { _, err = readRequest(body, ct, lim, securityPolicy{}) })
		t.Logf("gzip of %d zero bytes, %d bytes on the wire: %d bytes allocated (%.1f per byte on the wire; err %.60v)", tt.n, len(body), alloc, float64(alloc)/float64(len(body)), err)
		if (err != nil) != tt.refused {
			t.Fatalf("gzip of %d bytes: err %v, want refused %v", tt.n, err, tt.refused)
		}
		if alloc > tt.max && !raceEnabled {
			t.Errorf("gzip of %d bytes: %d bytes allocated, want at most %d", tt.n, alloc, tt.max)
		}
	}
}
