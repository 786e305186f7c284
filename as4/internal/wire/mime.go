package wire

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"strings"
)

// Part is one non-root part of a multipart/related body, decoded.
type Part struct {
	ContentID   string // without the angle brackets
	ContentType string
	Data        []byte
}

// SplitMIME returns the SOAP envelope and the other MIME parts of a body:
// the body itself when contentType is not multipart. The error says what
// is wrong with the MIME structure (an ebMS MimeInconsistency).
func SplitMIME(body []byte, contentType string) ([]byte, []*Part, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, nil, errors.New("Content-Type: " + err.Error())
	}
	if !strings.HasPrefix(mt, "multipart/") {
		return body, nil, nil
	}
	start, boundary := trimCID(params["start"]), params["boundary"]
	// The reader takes an input cut inside a part's headers for its end.
	if boundary == "" || !bytes.Contains(body, []byte("--"+boundary+"--")) {
		return nil, nil, errors.New("the multipart body does not end with its closing boundary (truncated?)")
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	var root []byte
	var parts []*Part
	for n := 1; ; n++ {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("MIME part %d: %v", n, err)
		}
		mp, err := readPart(p, n)
		if err != nil {
			return nil, nil, err
		}
		if root == nil && (start == "" || mp.ContentID == start) {
			root = mp.Data
			continue
		}
		parts = append(parts, mp)
	}
	if root == nil {
		return nil, nil, errors.New("no root part")
	}
	return root, parts, nil
}

func readPart(p *multipart.Part, n int) (*Part, error) {
	var r io.Reader = p
	switch cte := strings.ToLower(strings.TrimSpace(p.Header.Get("Content-Transfer-Encoding"))); cte {
	case "", "binary", "8bit", "7bit":
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, &stripSpace{r: p})
	case "quoted-printable":
		r = quotedprintable.NewReader(p)
	default:
		return nil, fmt.Errorf("MIME part %d: unsupported Content-Transfer-Encoding %q", n, cte)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("MIME part %d: %v", n, err)
	}
	return &Part{ContentID: CleanText(trimCID(p.Header.Get("Content-Id"))), ContentType: CleanText(p.Header.Get("Content-Type")), Data: data}, nil
}

// trimCID removes white space and the angle brackets of a Content-ID.
func trimCID(s string) string {
	return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "<"), ">")
}

// stripSpace drops line breaks and spaces, for base64 bodies.
type stripSpace struct{ r io.Reader }

// Read implements io.Reader.
func (s *stripSpace) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := s.r.Read(p)
		k := 0
		for _, b := range p[:n] {
			if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
				p[k] = b
				k++
			}
		}
		if k > 0 || err != nil {
			return k, err
		}
	}
}

// CleanText makes a MIME header value storable as database text: valid
// UTF-8 without NUL bytes.
func CleanText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}
