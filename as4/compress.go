package as4

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
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
func decompress(p *Part, budget *int64, limit int64) *failure {
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
	zr, err := gzip.NewReader(bytes.NewReader(p.Data))
	if err != nil {
		return fail("CompressionType is application/gzip but the data is not gzip: %v", err)
	}
	var out bytes.Buffer
	n, err := io.Copy(&out, io.LimitReader(zr, *budget+1))
	switch {
	case n > *budget:
		return fail("the payloads decompress to more than the endpoint's limit of %d bytes", limit)
	case err == io.ErrUnexpectedEOF:
		return fail("the gzip data is truncated (after %d decompressed bytes)", n)
	case err != nil:
		return fail("the gzip data is broken after %d decompressed bytes: %v", n, err)
	}
	*budget -= n
	p.Data = out.Bytes()
	p.Compressed = true
	return nil
}
