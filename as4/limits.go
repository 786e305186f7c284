package as4

import (
	"bytes"
	"fmt"
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
	// reserve is the request's share of Config.MaxDecompressedInFlight;
	// nil: unbounded.
	reserve *reservation
}

// prescan checks the SOAP envelope against the depth and element limits
// and refuses a DOCTYPE, before any parser builds structures from it. It
// scans the bytes for markup without allocating: nothing grows with the
// input. Malformed XML is left to the parsers that follow, which say
// where; the scan then stops.
func prescan(root []byte, lim limits) *failure {
	depth, elements := 0, 0
	for i := 0; i < len(root); {
		j := bytes.IndexByte(root[i:], '<')
		if j < 0 {
			return nil
		}
		i += j
		rest := root[i:]
		var end int // bytes of the markup at i, -1 if not closed
		switch {
		case bytes.HasPrefix(rest, []byte("<!--")):
			end = indexEnd(rest, "-->")
		case bytes.HasPrefix(rest, []byte("<![CDATA[")):
			end = indexEnd(rest, "]]>")
		case bytes.HasPrefix(rest, []byte("<!")):
			return senderFailure(InvalidHeader, fmt.Sprintf("the SOAP envelope has a document type declaration (%.20q... at byte %d): SOAP messages must not have one", rest, i))
		case bytes.HasPrefix(rest, []byte("<?")):
			end = indexEnd(rest, "?>")
		case bytes.HasPrefix(rest, []byte("</")):
			end = indexEnd(rest, ">")
			depth--
		default:
			attrs, selfClosing := 0, false
			end = -1
			var quote byte
			for k := 1; k < len(rest); k++ {
				c := rest[k]
				switch {
				case quote != 0:
					if c == quote {
						quote = 0
					}
				case c == '"' || c == '\'':
					quote = c
				case c == '=':
					attrs++
				case c == '>':
					end, selfClosing = k+1, rest[k-1] == '/'
				}
				if end > 0 {
					break
				}
			}
			depth++
			elements += 1 + attrs
			switch {
			case depth > lim.depth:
				return senderFailure(InvalidHeader, fmt.Sprintf("the SOAP envelope is nested deeper than %d elements (at byte %d)", lim.depth, i))
			case elements > lim.elements:
				return senderFailure(InvalidHeader, fmt.Sprintf("the SOAP envelope has more than %d elements and attributes (at byte %d)", lim.elements, i))
			}
			if selfClosing {
				depth--
			}
		}
		if end < 0 {
			return nil
		}
		i += end
	}
	return nil
}

// indexEnd returns the length of b up to and including the first sep, or
// -1.
func indexEnd(b []byte, sep string) int {
	k := bytes.Index(b, []byte(sep))
	if k < 0 {
		return -1
	}
	return k + len(sep)
}

// busy is the answer beyond Config.MaxConcurrentRequests.
func busy(n int) *failure {
	f := receiverFailure(http.StatusServiceUnavailable, fmt.Sprintf("the endpoint is answering its limit of %d requests at once; send the message again later", n), nil)
	f.retryAfter = 1
	return f
}

// defaultLimits are the limits of a Config with the defaults.
var defaultLimits = limits{depth: DefaultMaxDepth, elements: DefaultMaxElements, decompressed: DefaultMaxDecompressedBytes}
