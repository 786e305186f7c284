package as4

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
)

// Defaults of the Config limits that bound one request and the endpoint.
const (
	// DefaultMaxDepth is the deepest element nesting accepted anywhere in
	// the SOAP envelope: eb:Messaging's content is 6 levels deep, a
	// WS-Security header about 10; 64 leaves room for payloads in the
	// SOAP Body.
	DefaultMaxDepth = 64
	// DefaultMaxElements is the most elements (each attribute counted as
	// one more) accepted in the SOAP envelope, header and Body together.
	DefaultMaxElements = 100_000
	// DefaultMaxConcurrentRequests is the number of requests read and
	// answered at the same time; more are answered 503 at once.
	DefaultMaxConcurrentRequests = 16
	// DefaultMaxDecompressedBytes is the largest payload accepted after
	// gzip decompression: 200 MiB.
	DefaultMaxDecompressedBytes = 200 << 20
)

// maxDepth bounds the nesting the NRR copy and the security header reader
// follow; the envelope's own limit (Config.MaxDepth) is checked first.
const maxDepth = 256

// limits are the per-request bounds of a Handler's Config.
type limits struct {
	depth, elements int
	decompressed    int64
}

// prescan checks the SOAP envelope against the depth and element limits
// and refuses a DOCTYPE, before any parser builds structures from it. It
// reads raw tokens: no namespace or element stack grows with the input.
// Syntax errors are left to the parsers that follow, which say where.
func prescan(root []byte, lim limits) *failure {
	d := xml.NewDecoder(bytes.NewReader(root))
	d.Strict = false // entities and syntax are the later parsers' business
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	depth, elements := 0, 0
	for {
		t, err := d.RawToken()
		if err != nil {
			return nil
		}
		switch t := t.(type) {
		case xml.StartElement:
			depth++
			elements += 1 + len(t.Attr)
			switch {
			case depth > lim.depth:
				return senderFailure(InvalidHeader, fmt.Sprintf("the SOAP envelope is nested deeper than %d elements (at byte %d)", lim.depth, d.InputOffset()))
			case elements > lim.elements:
				return senderFailure(InvalidHeader, fmt.Sprintf("the SOAP envelope has more than %d elements and attributes (at byte %d)", lim.elements, d.InputOffset()))
			}
		case xml.EndElement:
			depth--
		case xml.Directive:
			return senderFailure(InvalidHeader, fmt.Sprintf("the SOAP envelope has a document type declaration (<!%.20s...> at byte %d): SOAP messages must not have one", t, d.InputOffset()))
		}
	}
}

// busy is the answer beyond Config.MaxConcurrentRequests.
func busy(n int) *failure {
	f := receiverFailure(http.StatusServiceUnavailable, fmt.Sprintf("the endpoint is answering its limit of %d requests at once; send the message again later", n), nil)
	f.retryAfter = 1
	return f
}

// defaultLimits are the limits of a Config with the defaults.
var defaultLimits = limits{depth: DefaultMaxDepth, elements: DefaultMaxElements, decompressed: DefaultMaxDecompressedBytes}
