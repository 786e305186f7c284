package wssec

import (
	"sort"
	"strings"
)

// Exclusive XML Canonicalization 1.0 without comments
// (https://www.w3.org/TR/xml-exc-c14n/) of an element subtree or a whole
// document. A namespace declaration is written on an element only where
// the element or one of its attributes uses the prefix (or the prefix is in
// the InclusiveNamespaces PrefixList) and the nearest written ancestor did
// not already declare it with the same value.

// canonicalize returns the exclusive canonical form of the subtree at n;
// inclusive lists the prefixes of the InclusiveNamespaces PrefixList
// ("#default" for the default namespace).
func canonicalize(n *node, inclusive []string) []byte {
	c := &canonicalizer{inclusive: map[string]bool{}}
	for _, p := range inclusive {
		if p == "#default" {
			p = ""
		}
		c.inclusive[p] = true
	}
	c.element(n, map[string]string{})
	return []byte(c.b.String())
}

// canonicalizeDocument returns the exclusive canonical form of a whole
// document: the root element with the processing instructions around it.
func canonicalizeDocument(d *document) []byte {
	c := &canonicalizer{inclusive: map[string]bool{}}
	for _, pi := range d.before {
		c.pi(pi)
		c.b.WriteByte('\n')
	}
	c.element(d.root, map[string]string{})
	for _, pi := range d.after {
		c.b.WriteByte('\n')
		c.pi(pi)
	}
	return []byte(c.b.String())
}

type canonicalizer struct {
	b         strings.Builder
	inclusive map[string]bool
}

// element writes n; rendered maps each prefix to the namespace the nearest
// written ancestor declared for it.
func (c *canonicalizer) element(n *node, rendered map[string]string) {
	scope := startTag(&c.b, n.prefix, n.local, n.attrs, c.inclusive, n.lookup, rendered)
	for _, ch := range n.children {
		switch ch.kind {
		case elementNode:
			c.element(ch, scope)
		case textNode:
			escapeText(&c.b, ch.text)
		case piNode:
			c.pi(ch)
		}
	}
	c.b.WriteString("</" + qname(n.prefix, n.local) + ">")
}

// startTag writes an element's canonical start tag: the namespace
// declarations it needs, sorted by prefix, then its attributes (whose
// namespaces are resolved) sorted by namespace and local name. It returns
// the namespaces rendered for the element's children.
func startTag(b *strings.Builder, prefix, local string, attrs []attr, inclusive map[string]bool, lookup func(string) (string, bool), rendered map[string]string) map[string]string {
	decls := namespaces(prefix, attrs, inclusive, lookup, rendered)
	b.WriteString("<" + qname(prefix, local))
	scope := rendered
	if len(decls) > 0 {
		scope = make(map[string]string, len(rendered)+len(decls))
		for k, v := range rendered {
			scope[k] = v
		}
		for _, d := range decls {
			scope[d.prefix] = d.uri
			if d.prefix == "" {
				b.WriteString(` xmlns="`)
			} else {
				b.WriteString(" xmlns:" + d.prefix + `="`)
			}
			escapeAttr(b, d.uri)
			b.WriteByte('"')
		}
	}
	sorted := append([]attr(nil), attrs...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].space != sorted[j].space {
			return sorted[i].space < sorted[j].space
		}
		return sorted[i].local < sorted[j].local
	})
	for _, a := range sorted {
		b.WriteString(" " + qname(a.prefix, a.local) + `="`)
		escapeAttr(b, a.value)
		b.WriteByte('"')
	}
	b.WriteByte('>')
	return scope
}

// namespaces returns the declarations to write on an element, sorted by
// prefix: those its name and attributes use, and the inclusive prefixes
// in scope, unless the nearest written ancestor declared them alike.
func namespaces(prefix string, attrs []attr, inclusive map[string]bool, lookup func(string) (string, bool), rendered map[string]string) []nsDecl {
	used := map[string]bool{prefix: true}
	for _, a := range attrs {
		if a.prefix != "" {
			used[a.prefix] = true
		}
	}
	for p := range inclusive {
		if _, inScope := lookup(p); inScope {
			used[p] = true
		}
	}
	var out []nsDecl
	for p := range used {
		if p == "xml" {
			continue
		}
		uri, _ := lookup(p)
		prev, ok := rendered[p]
		if p == "" && uri == "" && (!ok || prev == "") {
			continue // no default namespace, and none to undo
		}
		if ok && prev == uri {
			continue
		}
		out = append(out, nsDecl{p, uri})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].prefix < out[j].prefix })
	return out
}

func (c *canonicalizer) pi(n *node) {
	c.b.WriteString("<?" + n.local)
	if n.text != "" {
		c.b.WriteString(" " + n.text)
	}
	c.b.WriteString("?>")
}

func escapeText(b *strings.Builder, s string) {
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '\r':
			b.WriteString("&#xD;")
		default:
			b.WriteRune(r)
		}
	}
}

func escapeAttr(b *strings.Builder, s string) {
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '"':
			b.WriteString("&quot;")
		case '\t':
			b.WriteString("&#x9;")
		case '\n':
			b.WriteString("&#xA;")
		case '\r':
			b.WriteString("&#xD;")
		default:
			b.WriteRune(r)
		}
	}
}
