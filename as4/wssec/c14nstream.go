package wssec

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxAttachmentDepth bounds the nesting of an XML attachment that is
// canonicalized for its digest. The stream keeps only the open elements,
// so the attachment's size is not limited beyond the request's.
const maxAttachmentDepth = 4096

// streamFrame is one open element of the stream: its name as written, the
// namespaces declared on it, and what the canonical output has declared.
type streamFrame struct {
	name     string
	decls    []nsDecl
	rendered map[string]string
}

// canonicalizeStream writes the exclusive canonical form (without
// comments) of a whole document to w token by token, as
// canonicalizeDocument does for a parsed tree, in memory proportional to
// the nesting depth. XML attachments can be far larger than the envelope
// limits allow a tree for.
func canonicalizeStream(data []byte, w io.Writer) error {
	d := xml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	d.CharsetReader = func(label string, r io.Reader) (io.Reader, error) {
		switch strings.ToLower(label) {
		case "utf-8", "utf8", "us-ascii", "ascii":
			return r, nil
		}
		return nil, fmt.Errorf("unsupported character encoding %q", label)
	}
	bw := bufio.NewWriter(w)
	s := &stream{w: bw}
	for {
		tok, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := s.token(tok); err != nil {
			return fmt.Errorf("at byte %d: %w", d.InputOffset(), err)
		}
	}
	switch {
	case !s.rootSeen:
		return errors.New("no root element")
	case len(s.stack) > 0:
		return fmt.Errorf("unexpected end of document inside <%s>", s.stack[len(s.stack)-1].name)
	}
	return bw.Flush()
}

type stream struct {
	w        *bufio.Writer
	stack    []streamFrame
	rootSeen bool
	rootDone bool
	b        strings.Builder
}

func (s *stream) token(tok xml.Token) error {
	switch t := tok.(type) {
	case xml.StartElement:
		return s.start(t)
	case xml.EndElement:
		n := len(s.stack)
		if n == 0 || s.stack[n-1].name != qname(t.Name.Space, t.Name.Local) {
			return fmt.Errorf("unexpected end tag </%s>", qname(t.Name.Space, t.Name.Local))
		}
		s.w.WriteString("</" + s.stack[n-1].name + ">")
		s.stack = s.stack[:n-1]
		s.rootDone = len(s.stack) == 0
	case xml.CharData:
		if len(s.stack) == 0 {
			if len(bytes.TrimSpace(t)) > 0 {
				return errors.New("text outside the root element")
			}
			return nil
		}
		s.b.Reset()
		escapeText(&s.b, string(t))
		s.w.WriteString(s.b.String())
	case xml.ProcInst:
		if t.Target == "xml" {
			return nil
		}
		if s.rootDone {
			s.w.WriteByte('\n')
		}
		s.w.WriteString("<?" + t.Target)
		if len(t.Inst) > 0 {
			s.w.WriteString(" " + string(t.Inst))
		}
		s.w.WriteString("?>")
		if !s.rootSeen {
			s.w.WriteByte('\n')
		}
	case xml.Directive:
		return errDoctype
	}
	return nil
}

// lookup returns the namespace of a prefix in the open elements.
func (s *stream) lookup(prefix string) (string, bool) {
	if prefix == "xml" {
		return nsXML, true
	}
	for i := len(s.stack) - 1; i >= 0; i-- {
		for _, d := range s.stack[i].decls {
			if d.prefix == prefix {
				return d.uri, true
			}
		}
	}
	return "", prefix == ""
}

func (s *stream) start(t xml.StartElement) error {
	if s.rootDone {
		return errors.New("a second root element")
	}
	if len(s.stack) >= maxAttachmentDepth {
		return fmt.Errorf("elements nested deeper than %d", maxAttachmentDepth)
	}
	s.rootSeen = true
	f := streamFrame{name: qname(t.Name.Space, t.Name.Local)}
	var attrs []attr
	for _, a := range t.Attr {
		switch {
		case a.Name.Space == "" && a.Name.Local == "xmlns":
			f.decls = append(f.decls, nsDecl{"", a.Value})
		case a.Name.Space == "xmlns":
			f.decls = append(f.decls, nsDecl{a.Name.Local, a.Value})
		default:
			attrs = append(attrs, attr{prefix: a.Name.Space, local: a.Name.Local, value: a.Value})
		}
	}
	s.stack = append(s.stack, f)
	top := &s.stack[len(s.stack)-1]
	parent := map[string]string{}
	if len(s.stack) > 1 {
		parent = s.stack[len(s.stack)-2].rendered
	}
	for i := range attrs {
		a := &attrs[i]
		if a.prefix == "" {
			continue
		}
		uri, ok := s.lookup(a.prefix)
		if !ok {
			return fmt.Errorf("<%s>: attribute prefix %q is not declared", top.name, a.prefix)
		}
		a.space = uri
	}
	if _, ok := s.lookup(t.Name.Space); !ok {
		return fmt.Errorf("<%s>: prefix %q is not declared", top.name, t.Name.Space)
	}
	s.b.Reset()
	top.rendered = startTag(&s.b, t.Name.Space, t.Name.Local, attrs, nil, s.lookup, parent)
	s.w.WriteString(s.b.String())
	return nil
}
