package ebms

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/textproto"
	"strings"

	"github.com/txinbox/txinbox/edi/internal/scan"
)

// maxHeaderBytes bounds one block of MIME headers.
const maxHeaderBytes = 64 << 10

// parseMultipart finds the root part of a multipart/related body (the part
// named by the start parameter, else the first) and parses its envelope.
// Parts before the root are skipped by streaming; parts after it are not
// read at all.
func parseMultipart(in *scan.Reader, params map[string]string) (*Message, error) {
	boundary := params["boundary"]
	if boundary == "" {
		return nil, &Error{Path: "Content-Type", Offset: in.Offset(), Msg: "multipart content type without a boundary parameter", Err: ErrMIME}
	}
	start := strings.Trim(strings.TrimSpace(params["start"]), "<>")
	delim := []byte("--" + boundary)
	preamble := &partBody{in: in, delim: delim, atLineStart: true}
	if _, err := io.Copy(io.Discard, preamble); err != nil {
		return nil, mimeError(in, "the boundary "+quote(boundary)+" does not occur in the body", err)
	}
	for n := 1; !preamble.final; n++ {
		where := fmt.Sprintf("MIME part %d", n)
		h, err := readHeaders(in, where)
		if err != nil {
			return nil, err
		}
		body := &partBody{in: in, delim: delim}
		if start == "" || strings.Trim(strings.TrimSpace(h["Content-Id"]), "<>") == start {
			return parseRoot(in, h, body, where)
		}
		if _, err := io.Copy(io.Discard, body); err != nil {
			return nil, mimeError(in, where+" is not closed by the boundary", err)
		}
		preamble.final = body.final
	}
	if start == "" {
		return nil, &Error{Path: "multipart/related", Offset: in.Offset(), Msg: "the multipart body has no part", Err: ErrMIME}
	}
	return nil, &Error{Path: "multipart/related", Offset: in.Offset(), Msg: "no MIME part has the Content-ID <" + start + "> named by the start parameter", Err: ErrMIME}
}

func parseRoot(in *scan.Reader, h map[string]string, body io.Reader, where string) (*Message, error) {
	off := in.Offset()
	if ct := h["Content-Type"]; ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !isXMLType(mt) {
			return nil, &Error{Path: where, Offset: off, Msg: "root part has Content-Type " + quote(ct) + ", not a SOAP envelope", Err: ErrNotSOAP}
		}
	}
	r, ok := transferDecoded(h, body)
	if !ok {
		return nil, &Error{Path: where, Offset: off, Msg: "unsupported Content-Transfer-Encoding " + quote(h["Content-Transfer-Encoding"]), Err: ErrMIME}
	}
	return parseEnvelope(r, off, where+" ")
}

func mimeError(in *scan.Reader, msg string, err error) error {
	if err == io.ErrUnexpectedEOF {
		return &Error{Path: "multipart/related", Offset: in.Offset(), Msg: msg + " (input ends)", Err: ErrMIME}
	}
	return &Error{Path: "multipart/related", Offset: in.Offset(), Msg: msg + ": " + err.Error(), Err: ErrMIME}
}

// readLine reads one line of at most the buffer size, without its line end.
func readLine(in *scan.Reader) ([]byte, error) {
	line, err := in.ReadSlice('\n')
	if err != nil && !(err == io.EOF && len(line) > 0) {
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

// readHeaders reads MIME headers up to the empty line, unfolding continued
// lines. Keys are canonical ("Content-Id"); the first value of a key wins.
func readHeaders(in *scan.Reader, where string) (map[string]string, error) {
	h := map[string]string{}
	start, last := in.Offset(), ""
	for {
		off := in.Offset()
		line, err := readLine(in)
		if err != nil {
			return nil, &Error{Path: where, Offset: off, Msg: "input ends inside the MIME headers", Err: ErrMIME}
		}
		if len(line) == 0 {
			return h, nil
		}
		if in.Offset()-start > maxHeaderBytes {
			return nil, &Error{Path: where, Offset: start, Msg: "MIME headers longer than 64 KiB", Err: ErrMIME}
		}
		if line[0] == ' ' || line[0] == '\t' {
			if last != "" {
				h[last] += " " + strings.TrimSpace(string(line))
			}
			continue
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(bytes.TrimSpace(k)) == 0 {
			return nil, &Error{Path: where, Offset: off, Msg: "not a MIME header line: " + quote(string(line)), Err: ErrMIME}
		}
		last = textproto.CanonicalMIMEHeaderKey(string(bytes.TrimSpace(k)))
		if _, dup := h[last]; !dup {
			h[last] = strings.TrimSpace(string(v))
		} else {
			last = ""
		}
	}
}
