package as4

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// xmlShape returns the nesting depth and the element+attribute count of
// a well-formed document by encoding/xml, ok false if it is not
// well-formed or has a directive.
func xmlShape(doc []byte) (depth, elements int, ok bool) {
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	cur := 0
	for {
		t, err := d.RawToken()
		if err == io.EOF {
			return depth, elements, cur == 0
		}
		if err != nil {
			return 0, 0, false
		}
		switch t := t.(type) {
		case xml.StartElement:
			cur++
			depth = max(depth, cur)
			elements += 1 + len(t.Attr)
		case xml.EndElement:
			cur--
		case xml.Directive:
			return 0, 0, false
		}
	}
}

func TestPrescan(t *testing.T) {
	lim := limits{depth: 3, elements: 6}
	for _, tt := range []struct {
		doc  string
		want bool // refused
	}{
		{`<a><b><c/></b></a>`, false},
		{`<a><b><c><d/></c></b></a>`, true},
		{`<a><!-- <b><c><d> --><b x="1>2" y='<'/></a>`, false},
		{`<a><![CDATA[<b><c><d><e>]]></a>`, false},
		{`<?xml version="1.0"?><?pi <b><c><d>?><a/>`, false},
		{`<a b="1" c="2" d="3" e="4" f="5"/>`, false},
		{`<a b="1" c="2" d="3" e="4" f="5" g="6"/>`, true},
		{`<!-- <!DOCTYPE x> --><a/>`, false},
		{`<!DOCTYPE a><a/>`, true},
		{`<a><b><c>text > more</c></b></a>`, false},
		{`<a><b><c></c><c></c><c></c></b></a>`, false},
		{`<a x="unclosed`, false},
	} {
		if got := prescan([]byte(tt.doc), lim) != nil; got != tt.want {
			t.Errorf("prescan(%s) refused %v, want %v", tt.doc, got, tt.want)
		}
	}
}

// FuzzPrescan: on well-formed XML the byte scanner agrees with
// encoding/xml on the depth and element limits.
func FuzzPrescan(f *testing.F) {
	f.Add([]byte(`<a><b x="1"><c/></b><!-- <d> --></a>`), 2, 4)
	f.Add([]byte(`<a><![CDATA[<b>]]><?x <y>?><b/></a>`), 1, 10)
	f.Fuzz(func(t *testing.T, doc []byte, depth, elements int) {
		depth, elements = 1+abs(depth)%10, 1+abs(elements)%50
		d, e, ok := xmlShape(doc)
		if !ok || strings.Contains(string(doc), "<!") && !strings.Contains(string(doc), "<!--") && !strings.Contains(string(doc), "<![CDATA[") {
			return
		}
		want := d > depth || e > elements
		if got := prescan(doc, limits{depth: depth, elements: elements}) != nil; got != want {
			t.Fatalf("prescan refused %v, encoding/xml: depth %d elements %d against %d/%d", got, d, e, depth, elements)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
