package ebms

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/quotedprintable"
	"strings"

	"github.com/txinbox/txinbox/edi/internal/scan"
)

// Parse reads an AS4 message and returns its user message.
//
// contentType is the HTTP Content-Type of the body: multipart/related (SOAP
// with attachments, the boundary and the optional start parameter are taken
// from it) or application/soap+xml, text/xml or application/xml for a bare
// envelope. When contentType is empty, r may start with '<' (a bare
// envelope), with MIME headers, optionally after an HTTP request or status
// line, whose Content-Type is then used, or with a "--boundary" line (a
// multipart body saved without its headers).
//
// The error is a *SignalError for a signal message, a *FaultError for a
// SOAP Fault without eb:Messaging, and an *Error otherwise.
func Parse(r io.Reader, contentType string) (*Message, error) {
	in := scan.New(r)
	if contentType == "" {
		ct, err := sniff(in)
		if err != nil {
			return nil, err
		}
		contentType = ct
	}
	return parseBody(in, contentType)
}

// sniff returns "" for a bare envelope, or reads the MIME headers at the
// start of the input and returns their Content-Type.
func sniff(in *scan.Reader) (string, error) {
	b, err := in.SkipSpace(scan.IsLineSpace)
	if err != nil {
		return "", &Error{Offset: in.Offset(), Msg: "the input is empty", Err: ErrNotSOAP}
	}
	if p, _ := in.Peek(4); b == '<' || bytes.HasPrefix(p, []byte("\xef\xbb\xbf<")) {
		return "application/soap+xml", nil
	}
	if b, ok := leadingBoundary(in); ok {
		return mime.FormatMediaType("multipart/related", map[string]string{"boundary": b}), nil
	}
	if isStartLine(in) {
		if _, err := readLine(in); err != nil {
			return "", err
		}
	}
	off := in.Offset()
	h, err := readHeaders(in, "MIME headers")
	if err != nil {
		return "", err
	}
	if te := h["Transfer-Encoding"]; te != "" && !strings.EqualFold(te, "identity") {
		return "", &Error{Path: "MIME headers", Offset: off, Msg: "Transfer-Encoding " + te + " is not supported", Err: ErrMIME}
	}
	ct := h["Content-Type"]
	if ct == "" {
		return "", &Error{Path: "MIME headers", Offset: off, Msg: "no Content-Type header (and the input does not start with '<')", Err: ErrNotSOAP}
	}
	return ct, nil
}

// leadingBoundary recognises a multipart body saved without its headers:
// the first line is a delimiter line "--boundary".
func leadingBoundary(in *scan.Reader) (string, bool) {
	p, _ := in.Peek(256)
	line, _, found := bytes.Cut(p, []byte("\n"))
	line = bytes.TrimRight(line, " \t\r")
	if !found || !bytes.HasPrefix(line, []byte("--")) || len(line) < 3 || len(line) > 72 || bytes.ContainsAny(line, ":<") {
		return "", false
	}
	return string(line[2:]), true
}

// isStartLine reports whether the input starts with an HTTP request or
// status line, as in captures of AS4 exchanges.
func isStartLine(in *scan.Reader) bool {
	p, _ := in.Peek(256)
	line, _, _ := bytes.Cut(p, []byte("\n"))
	line = bytes.TrimRight(line, "\r")
	if bytes.HasPrefix(line, []byte("HTTP/")) {
		return true
	}
	f := bytes.Fields(line)
	return len(f) == 3 && bytes.HasPrefix(f[2], []byte("HTTP/"))
}

func isXMLType(mt string) bool {
	switch mt {
	case "application/soap+xml", "text/xml", "application/xml", "application/xop+xml":
		return true
	}
	return false
}

func parseBody(in *scan.Reader, contentType string) (*Message, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, &Error{Path: "Content-Type", Offset: in.Offset(), Msg: "cannot parse " + quote(contentType) + ": " + err.Error(), Err: ErrMIME}
	}
	switch {
	case strings.HasPrefix(mt, "multipart/"):
		return parseMultipart(in, params)
	case isXMLType(mt):
		return parseEnvelope(in, in.Offset(), "")
	}
	return nil, &Error{Path: "Content-Type", Offset: in.Offset(), Msg: quote(mt) + " is neither multipart/related nor a SOAP envelope type", Err: ErrNotSOAP}
}

// transferDecoded returns the part body decoded per its
// Content-Transfer-Encoding.
func transferDecoded(h map[string]string, body io.Reader) (io.Reader, bool) {
	switch strings.ToLower(strings.TrimSpace(h["Content-Transfer-Encoding"])) {
	case "", "binary", "8bit", "7bit":
		return body, true
	case "base64":
		return base64.NewDecoder(base64.StdEncoding, &stripSpace{r: body}), true
	case "quoted-printable":
		return quotedprintable.NewReader(body), true
	}
	return nil, false
}

func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

// stripSpace drops line breaks and spaces, for base64 bodies.
type stripSpace struct{ r io.Reader }

// Read implements io.Reader.
func (s *stripSpace) Read(p []byte) (int, error) {
	for {
		n, err := s.r.Read(p)
		k := 0
		for _, b := range p[:n] {
			if !scan.IsLineSpace(b) {
				p[k] = b
				k++
			}
		}
		if k > 0 || err != nil {
			return k, err
		}
	}
}
