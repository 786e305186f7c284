package store_test

import (
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strings"
	"testing"
)

// required are the interfaces every store implements: not optional, not
// in the list.
var required = []string{"Driver", "Tx"}

// TestOptionalCapabilitiesListed: every interface the package declares,
// but Driver and Tx, is an item of the package doc's "Optional
// capabilities" list (an item starting with a link to it), and every item
// names such an interface, so the list stays complete and current.
func TestOptionalCapabilitiesListed(t *testing.T) {
	t.Parallel()
	pkg := parseStore(t)
	declared := interfacesOf(pkg)
	if len(declared) < 10 {
		t.Fatalf("found %d interfaces in package store (%v): the parse is broken", len(declared), declared)
	}
	listed := capabilitiesListed(t, pkg)
	for _, name := range declared {
		if !slices.Contains(required, name) && !slices.Contains(listed, name) {
			t.Errorf("interface %s is not in the package doc's list of optional capabilities (doc.go): "+
				"add an item \"[%s] (Driver or Tx): what a store gains. Without it, ...\"", name, name)
		}
	}
	for _, name := range listed {
		if !slices.Contains(declared, name) || slices.Contains(required, name) {
			t.Errorf("the list of optional capabilities names %s, which is no optional interface of package store", name)
		}
	}
}

// parseStore reads the package's doc from its non-test files.
func parseStore(t *testing.T) *doc.Package {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	pkg, err := doc.NewFromFiles(fset, files, "github.com/txinbox/txinbox/store")
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

// interfacesOf names the exported interface types of pkg.
func interfacesOf(pkg *doc.Package) []string {
	var out []string
	for _, typ := range pkg.Types {
		for _, spec := range typ.Decl.Specs {
			if ts, ok := spec.(*ast.TypeSpec); ok {
				if _, ok := ts.Type.(*ast.InterfaceType); ok && ts.Name.IsExported() {
					out = append(out, ts.Name.Name)
				}
			}
		}
	}
	return out
}

// capabilitiesListed names the interfaces that the items of the list under
// the package doc's "Optional capabilities" heading start with a link to.
func capabilitiesListed(t *testing.T, pkg *doc.Package) []string {
	t.Helper()
	d := pkg.Parser().Parse(pkg.Doc)
	var out []string
	section := false
	for _, b := range d.Content {
		switch b := b.(type) {
		case *comment.Heading:
			section = headingText(b) == "Optional capabilities"
		case *comment.List:
			if !section {
				continue
			}
			for _, item := range b.Items {
				if name := leadingLink(item); name != "" {
					out = append(out, name)
				} else {
					t.Errorf("an item of the optional capabilities list does not start with a [link] to its interface")
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal(`the package doc has no list under a heading "# Optional capabilities"`)
	}
	return out
}

func headingText(h *comment.Heading) string {
	var sb strings.Builder
	for _, x := range h.Text {
		if p, ok := x.(comment.Plain); ok {
			sb.WriteString(string(p))
		}
	}
	return sb.String()
}

// leadingLink is the name that item's text starts with a doc link to, ""
// if none.
func leadingLink(item *comment.ListItem) string {
	if len(item.Content) == 0 {
		return ""
	}
	p, ok := item.Content[0].(*comment.Paragraph)
	if !ok || len(p.Text) == 0 {
		return ""
	}
	if l, ok := p.Text[0].(*comment.DocLink); ok && l.ImportPath == "" && l.Recv == "" {
		return l.Name
	}
	return ""
}
