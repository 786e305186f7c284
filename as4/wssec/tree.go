package wssec

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Limits on a parsed document. The endpoint's body limit bounds the bytes;
// these bound the tree built from them, so that a deeply nested or
// element-heavy envelope cannot make the verifier's memory grow far beyond
// the message size.
const (
	maxDepth    = 64
	maxElements = 100000
	maxAttrs    = 256
)

const nsXML = "http://www.w3.org/XML/1998/namespace"

type nodeKind int

const (
	elementNode nodeKind = iota
	textNode
	piNode
)

// node is an element, a text or a processing instruction of a parsed
// document. Comments are dropped: exclusive C14N without comments ignores
// them and nothing else needs them.
type node struct {
	kind     nodeKind
	prefix   string // element: the prefix as written
	local    string // element: the local name; PI: the target
	space    string // element: the namespace
	attrs    []attr
	nsDecls  []nsDecl // the xmlns attributes written on this element
	parent   *node
	children []*node
	text     string // text and PI content
	// startTag is the byte range of an element's start tag in the source;
	// end is the offset after its end tag.
	startTag [2]int64
	end      int64
}

type attr struct {
	prefix, local, space, value string
}

type nsDecl struct{ prefix, uri string }

// document is a parsed XML document.
type document struct {
	root *node
	// before and after are the PIs outside the root element.
	before, after []*node
	// ids maps each Id attribute value (wsu:Id, Id, id, xml:id) to its
	// element; dupIDs lists values that occur more than once.
	ids    map[string]*node
	dupIDs []string
}

// errDoctype is returned for a document with a DOCTYPE or other directive.
var errDoctype = errors.New("a DOCTYPE or other <!...> directive is not allowed")

// parse reads an XML document, resolving namespaces itself so that
// the prefixes as written are kept for canonicalization.
func parse(data []byte) (*document, error) {
	d := xml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	d.CharsetReader = func(label string, r io.Reader) (io.Reader, error) {
		switch strings.ToLower(label) {
		case "utf-8", "utf8", "us-ascii", "ascii":
			return r, nil
		}
		return nil, fmt.Errorf("unsupported character encoding %q: use UTF-8", label)
	}
	p := &parser{doc: &document{ids: map[string]*node{}}}
	for {
		start := d.InputOffset()
		tok, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if err := p.token(tok, start, d.InputOffset()); err != nil {
			return nil, fmt.Errorf("at byte %d: %w", start, err)
		}
	}
	switch {
	case p.doc.root == nil:
		return nil, errors.New("no root element")
	case p.cur != nil:
		return nil, fmt.Errorf("unexpected end of document inside <%s>", qname(p.cur.prefix, p.cur.local))
	}
	return p.doc, nil
}

type parser struct {
	doc      *document
	cur      *node
	depth    int
	elements int
}

func (p *parser) token(tok xml.Token, start, end int64) error {
	switch t := tok.(type) {
	case xml.StartElement:
		return p.startElement(t, start, end)
	case xml.EndElement:
		if p.cur == nil || t.Name.Space != p.cur.prefix || t.Name.Local != p.cur.local {
			return fmt.Errorf("unexpected end tag </%s>", qname(t.Name.Space, t.Name.Local))
		}
		p.cur.end = end
		p.cur = p.cur.parent
		p.depth--
	case xml.CharData:
		if p.cur == nil {
			if len(bytes.TrimSpace(t)) > 0 {
				return errors.New("text outside the root element")
			}
			return nil
		}
		if n := len(p.cur.children); n > 0 && p.cur.children[n-1].kind == textNode {
			p.cur.children[n-1].text += string(t)
			return nil
		}
		p.cur.children = append(p.cur.children, &node{kind: textNode, text: string(t), parent: p.cur})
	case xml.ProcInst:
		if t.Target == "xml" {
			return nil
		}
		pi := &node{kind: piNode, local: t.Target, text: string(t.Inst), parent: p.cur}
		switch {
		case p.cur != nil:
			p.cur.children = append(p.cur.children, pi)
		case p.doc.root == nil:
			p.doc.before = append(p.doc.before, pi)
		default:
			p.doc.after = append(p.doc.after, pi)
		}
	case xml.Directive:
		return errDoctype
	}
	return nil
}

func (p *parser) startElement(t xml.StartElement, start, end int64) error {
	if p.cur == nil && p.doc.root != nil {
		return errors.New("a second root element")
	}
	p.depth++
	p.elements++
	switch {
	case p.depth > maxDepth:
		return fmt.Errorf("elements nested deeper than %d", maxDepth)
	case p.elements > maxElements:
		return fmt.Errorf("more than %d elements", maxElements)
	case len(t.Attr) > maxAttrs:
		return fmt.Errorf("<%s> has more than %d attributes", qname(t.Name.Space, t.Name.Local), maxAttrs)
	}
	n := &node{kind: elementNode, prefix: t.Name.Space, local: t.Name.Local, parent: p.cur, startTag: [2]int64{start, end}}
	for _, a := range t.Attr {
		switch {
		case a.Name.Space == "" && a.Name.Local == "xmlns":
			n.nsDecls = append(n.nsDecls, nsDecl{"", a.Value})
		case a.Name.Space == "xmlns":
			if a.Value == "" {
				return fmt.Errorf("xmlns:%s=\"\" (undeclaring a prefix is XML 1.1 only)", a.Name.Local)
			}
			n.nsDecls = append(n.nsDecls, nsDecl{a.Name.Local, a.Value})
		default:
			n.attrs = append(n.attrs, attr{prefix: a.Name.Space, local: a.Name.Local, value: a.Value})
		}
	}
	if err := p.resolve(n); err != nil {
		return err
	}
	if p.cur == nil {
		p.doc.root = n
	} else {
		p.cur.children = append(p.cur.children, n)
	}
	p.cur = n
	return nil
}

// resolve sets the namespaces of an element and its attributes, checks
// that no attribute occurs twice and records the element's Id.
func (p *parser) resolve(n *node) error {
	var ok bool
	if n.space, ok = n.lookup(n.prefix); !ok {
		return fmt.Errorf("<%s>: prefix %q is not declared", qname(n.prefix, n.local), n.prefix)
	}
	seen := map[[2]string]bool{}
	for i := range n.attrs {
		a := &n.attrs[i]
		if a.prefix != "" {
			if a.space, ok = n.lookup(a.prefix); !ok {
				return fmt.Errorf("<%s>: attribute prefix %q is not declared", qname(n.prefix, n.local), a.prefix)
			}
		}
		key := [2]string{a.space, a.local}
		if seen[key] {
			return fmt.Errorf("<%s>: attribute %s occurs twice", qname(n.prefix, n.local), qname(a.prefix, a.local))
		}
		seen[key] = true
		if isIDAttr(a) {
			id := strings.TrimSpace(a.value)
			if _, dup := p.doc.ids[id]; dup {
				p.doc.dupIDs = append(p.doc.dupIDs, id)
			}
			p.doc.ids[id] = n
		}
	}
	return nil
}

// isIDAttr reports whether a is an attribute that WS-Security and XML
// Signature references resolve: wsu:Id, xml:id, or an unqualified Id or id.
func isIDAttr(a *attr) bool {
	switch a.space {
	case nsWSU:
		return a.local == "Id"
	case nsXML:
		return a.local == "id"
	case "":
		return a.local == "Id" || a.local == "id"
	}
	return false
}

// lookup returns the namespace bound to prefix at n ("" for no default
// namespace).
func (n *node) lookup(prefix string) (string, bool) {
	if prefix == "xml" {
		return nsXML, true
	}
	for e := n; e != nil; e = e.parent {
		for _, d := range e.nsDecls {
			if d.prefix == prefix {
				return d.uri, true
			}
		}
	}
	return "", prefix == ""
}

// is reports whether n is the element {space}local.
func (n *node) is(space, local string) bool {
	return n != nil && n.kind == elementNode && n.space == space && n.local == local
}

// elements returns the element children of n.
func (n *node) elements() []*node {
	var out []*node
	for _, c := range n.children {
		if c.kind == elementNode {
			out = append(out, c)
		}
	}
	return out
}

// child returns the only child element {space}local of n, nil if there is
// none, and an error if there are several.
func (n *node) child(space, local string) (*node, error) {
	var found *node
	for _, c := range n.elements() {
		if c.is(space, local) {
			if found != nil {
				return nil, fmt.Errorf("<%s> has more than one <%s>", qname(n.prefix, n.local), local)
			}
			found = c
		}
	}
	return found, nil
}

// attr returns the value of the attribute {space}local, trimmed.
func (n *node) attr(space, local string) string {
	for _, a := range n.attrs {
		if a.space == space && a.local == local {
			return strings.TrimSpace(a.value)
		}
	}
	return ""
}

// textContent returns the concatenated text of n's children.
func (n *node) textContent() string {
	var b strings.Builder
	for _, c := range n.children {
		if c.kind == textNode {
			b.WriteString(c.text)
		}
	}
	return b.String()
}

// id returns the element's Id attribute value.
func (n *node) id() string {
	for i := range n.attrs {
		if isIDAttr(&n.attrs[i]) {
			return strings.TrimSpace(n.attrs[i].value)
		}
	}
	return ""
}

func qname(prefix, local string) string {
	if prefix == "" {
		return local
	}
	return prefix + ":" + local
}
