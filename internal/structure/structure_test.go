// Package structure holds a test of the source tree's shape: the limits
// the project keeps so that a newcomer can read any part of it.
package structure

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The limits, over non-test Go files outside examples/ and testdata/.
const (
	maxFileLines    = 600
	maxPackageLines = 3000
	maxP90FuncLines = 35
)

// tree is what the walk found.
type tree struct {
	fileLines    map[string]int // by path
	packageLines map[string]int // by directory
	funcLines    []int
	undocumented []string // exported identifiers of non-internal packages without a doc comment
}

func TestStructure(t *testing.T) {
	tr, err := walk("../..")
	if err != nil {
		t.Fatal(err)
	}
	for f, n := range tr.fileLines {
		if n > maxFileLines {
			t.Errorf("%s has %d lines, more than %d: split it by concern", f, n, maxFileLines)
		}
	}
	for p, n := range tr.packageLines {
		if n > maxPackageLines {
			t.Errorf("package %s has %d non-test lines, more than %d", p, n, maxPackageLines)
		}
	}
	slices.Sort(tr.funcLines)
	if p90 := tr.funcLines[len(tr.funcLines)*9/10]; p90 > maxP90FuncLines {
		t.Errorf("the 90th percentile of function lengths is %d lines, more than %d", p90, maxP90FuncLines)
	}
	for _, u := range tr.undocumented {
		t.Errorf("%s is exported without a doc comment", u)
	}
	t.Logf("%d files, %d packages, %d functions (p90 %d lines)", len(tr.fileLines), len(tr.packageLines),
		len(tr.funcLines), tr.funcLines[len(tr.funcLines)*9/10])
}

// TestStructureCatches runs the walk over a tree made to break each limit,
// so that the test above cannot pass by finding nothing.
func TestStructureCatches(t *testing.T) {
	dir := t.TempDir()
	long := "package big\n\n// F is long.\nfunc F() {\n" + strings.Repeat("\t_ = 1\n", maxFileLines) + "}\n\nfunc g() {}\n\nvar X = 1\n"
	if err := os.MkdirAll(filepath.Join(dir, "big"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big", "big.go"), []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := walk(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tr.fileLines["big/big.go"] <= maxFileLines || tr.packageLines["big"] <= maxFileLines {
		t.Errorf("lines not counted: %v %v", tr.fileLines, tr.packageLines)
	}
	if !slices.Contains(tr.funcLines, maxFileLines+2) {
		t.Errorf("function length not measured: %v", tr.funcLines)
	}
	if want := []string{"big/big.go:X"}; !slices.Equal(tr.undocumented, want) {
		t.Errorf("undocumented = %v, want %v (g is unexported)", tr.undocumented, want)
	}
}

func walk(root string) (*tree, error) {
	tr := &tree{fileLines: map[string]int{}, packageLines: map[string]int{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (d.Name() == "testdata" || d.Name() == "examples" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		return tr.file(fset, p, rel)
	})
	return tr, err
}

func (tr *tree) file(fset *token.FileSet, path, rel string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	n := strings.Count(string(src), "\n")
	tr.fileLines[rel] = n
	tr.packageLines[filepath.ToSlash(filepath.Dir(rel))] += n
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	public := f.Name.Name != "main" && !strings.HasPrefix(rel, "internal/") && !strings.Contains(rel, "/internal/")
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Body != nil {
				tr.funcLines = append(tr.funcLines, fset.Position(d.End()).Line-fset.Position(d.Pos()).Line+1)
			}
			if public && d.Doc == nil && d.Name.IsExported() && exportedRecv(d.Recv) {
				tr.undocumented = append(tr.undocumented, rel+":"+funcName(d))
			}
		case *ast.GenDecl:
			if public {
				tr.undocumented = append(tr.undocumented, undocumentedSpecs(d, rel)...)
			}
		}
	}
	return nil
}

func undocumentedSpecs(d *ast.GenDecl, rel string) []string {
	var out []string
	for _, s := range d.Specs {
		switch s := s.(type) {
		case *ast.TypeSpec:
			if s.Name.IsExported() && d.Doc == nil && s.Doc == nil {
				out = append(out, rel+":"+s.Name.Name)
			}
		case *ast.ValueSpec:
			for _, nm := range s.Names {
				if nm.IsExported() && d.Doc == nil && s.Doc == nil && s.Comment == nil {
					out = append(out, rel+":"+nm.Name)
				}
			}
		}
	}
	return out
}

func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil {
		return d.Name.Name
	}
	return recvName(d.Recv.List[0].Type) + "." + d.Name.Name
}

// exportedRecv reports whether a method's receiver type is exported (a
// function has none: true).
func exportedRecv(fl *ast.FieldList) bool {
	if fl == nil {
		return true
	}
	return ast.IsExported(recvName(fl.List[0].Type))
}

func recvName(t ast.Expr) string {
	switch x := t.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}
