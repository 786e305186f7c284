package as4

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// gzipMediaType is the only CompressionType of AS4 (profile §3.1).
const gzipMediaType = "application/gzip"

// decompress replaces a payload compressed per AS4 (the part property
// CompressionType application/gzip) by its content, after decryption.
// The whole gzip stream is checked (every member's CRC-32 and length, no
// trailing data); decompression stops as soon as the message's payloads
// pass budget bytes, which it decrements (limit is the budget of the
// whole message, for the error). A compressed payload must name
// its MimeType. The answer to any of this is EBMS:0303.
func decompress(p *Part, budget *int64, limit int64, reserve *reservation) *failure {
	ct := p.Info.Property("CompressionType")
	if ct == "" {
		return nil
	}
	fail := func(format string, args ...any) *failure {
		return senderFailure(DecompressionFailure, fmt.Sprintf("payload %q: ", p.Info.Href)+fmt.Sprintf(format, args...))
	}
	switch {
	case ct != gzipMediaType:
		return fail("CompressionType %q is not supported (AS4 uses application/gzip)", ct)
	case p.Info.Property("MimeType") == "":
		return fail("CompressionType is set but the MimeType part property is missing: the type of the decompressed payload is unknown")
	}
	// The first pass checks the stream and counts its bytes without
	// keeping them: a bomb costs no memory. The second decompresses into
	// a buffer of exactly that size, once the size is within budget and
	// the endpoint's bytes in flight.
	n, err := gunzip(p.Data, io.Discard, *budget+1)
	switch {
	case n > *budget:
		return fail("the payloads decompress to more than the endpoint's limit of %d bytes", limit)
	case err == io.ErrUnexpectedEOF:
		return fail("the gzip data is truncated (after %d decompressed bytes)", n)
	case errors.As(err, new(notGzip)):
		return fail("CompressionType is application/gzip but the data is not gzip: %v", err)
	case err != nil:
		return fail("the gzip data is broken after %d decompressed bytes: %v", n, err)
	}
	if !reserve.take(n) {
		return busyDecompressing(reserve)
	}
	out := &fixedWriter{b: make([]byte, 0, n)}
	if m, err := gunzip(p.Data, out, n); err != nil || m != n {
		return fail("the gzip data decompressed differently the second time (%d bytes): %v", m, err)
	}
	*budget -= n
	p.Data = out.b
	p.Compressed = true
	return nil
}

// gunzip writes at most limit bytes of the gzip data to w and returns
// how many it wrote.
func gunzip(data []byte, w io.Writer, limit int64) (int64, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return 0, notGzip{err}
	}
	return io.Copy(w, io.LimitReader(zr, limit))
}

// fixedWriter appends to b within its capacity (io.Copy would grow a
// bytes.Buffer past it for a last read).
type fixedWriter struct{ b []byte }

func (w *fixedWriter) Write(p []byte) (int, error) {
	if len(w.b)+len(p) > cap(w.b) {
		return 0, io.ErrShortWrite
	}
	w.b = append(w.b, p...)
	return len(p), nil
}

// notGzip is the error of data without a gzip header.
type notGzip struct{ error }

// inFlight bounds the decompressed bytes held by all requests at once
// (Config.MaxDecompressedInFlight).
type inFlight struct {
	mu        sync.Mutex
	used, max int64
}

// reservation is one request's share of an inFlight, released when the
// request is answered. A nil reservation takes anything.
type reservation struct {
	of *inFlight
	n  int64
}

func (f *inFlight) reservation() *reservation { return &reservation{of: f} }

// take reserves n more bytes, or reports that the endpoint holds too many.
func (r *reservation) take(n int64) bool {
	if r == nil {
		return true
	}
	r.of.mu.Lock()
	defer r.of.mu.Unlock()
	if r.of.used+n > r.of.max {
		return false
	}
	r.of.used += n
	r.n += n
	return true
}

// release returns the request's bytes.
func (r *reservation) release() {
	r.of.mu.Lock()
	r.of.used -= r.n
	r.of.mu.Unlock()
	r.n = 0
}

// busyDecompressing is the answer when the decompressed payloads of the
// requests being answered leave no room for a request's.
func busyDecompressing(r *reservation) *failure {
	f := receiverFailure(http.StatusServiceUnavailable, fmt.Sprintf("the endpoint holds its limit of %d decompressed bytes for other messages; send the message again later", r.of.max), nil)
	f.retryAfter = 1
	return f
}
