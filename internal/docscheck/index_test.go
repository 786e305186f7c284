package docscheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// typeRef names a type a field or a variable has: name in package pkg
// (a package name; "" for the package that declares the field).
type typeRef struct{ pkg, name string }

// typeInfo is what a name can be followed by in a doc: a type's fields
// and methods (an interface's too), and the types it embeds, whose
// members are promoted.
type typeInfo struct {
	members  map[string]typeRef // field or method name -> its type (zero when not a named type)
	embedded []typeRef
}

// pkgIndex is one package's top-level names.
type pkgIndex struct {
	name  string
	dir   string             // slash-separated, relative to the module's root
	decls map[string]typeRef // func, var, const, type -> the type of a var when written
	types map[string]*typeInfo
}

// modIndex holds the module's packages by package name: several packages
// may share one (kafka is a source and a bench scenario).
type modIndex map[string][]*pkgIndex

// indexModule parses the non-test Go files under root (skipping testdata
// and hidden directories) and indexes their packages.
func indexModule(root string) (modIndex, error) {
	byDir := map[string]*pkgIndex{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		if byDir[dir] == nil {
			rel, _ := filepath.Rel(root, dir)
			byDir[dir] = &pkgIndex{name: f.Name.Name, dir: filepath.ToSlash(rel), decls: map[string]typeRef{}, types: map[string]*typeInfo{}}
		}
		byDir[dir].add(f)
		return nil
	})
	idx := modIndex{}
	for _, p := range byDir {
		idx[p.name] = append(idx[p.name], p)
	}
	return idx, err
}

// atDir returns the name of the package in dir (relative to the module's
// root, slash-separated), "" if none.
func (idx modIndex) atDir(dir string) string {
	for name, pkgs := range idx {
		for _, p := range pkgs {
			if p.dir == dir {
				return name
			}
		}
	}
	return ""
}

// add indexes the top-level declarations of one file.
func (p *pkgIndex) add(f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				p.decls[d.Name.Name] = typeRef{}
				continue
			}
			if recv := typeOf(d.Recv.List[0].Type); recv.name != "" {
				p.typ(recv.name).members[d.Name.Name] = typeRef{}
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				p.addSpec(spec)
			}
		}
	}
}

func (p *pkgIndex) addSpec(spec ast.Spec) {
	switch s := spec.(type) {
	case *ast.ValueSpec:
		for _, n := range s.Names {
			p.decls[n.Name] = typeOf(s.Type)
		}
	case *ast.TypeSpec:
		p.decls[s.Name.Name] = typeRef{}
		ti := p.typ(s.Name.Name)
		switch t := s.Type.(type) {
		case *ast.StructType:
			ti.addFields(t.Fields)
		case *ast.InterfaceType:
			ti.addFields(t.Methods)
		default: // a defined type or an alias: look through it
			if ref := typeOf(t); ref.name != "" {
				ti.embedded = append(ti.embedded, ref)
			}
		}
	}
}

func (p *pkgIndex) typ(name string) *typeInfo {
	if p.types[name] == nil {
		p.types[name] = &typeInfo{members: map[string]typeRef{}}
	}
	return p.types[name]
}

// addFields adds a struct's fields or an interface's methods.
func (ti *typeInfo) addFields(fl *ast.FieldList) {
	for _, fld := range fl.List {
		ref := typeOf(fld.Type)
		if len(fld.Names) == 0 { // embedded: its name is its type's
			if ref.name != "" {
				ti.members[ref.name] = ref
				ti.embedded = append(ti.embedded, ref)
			}
			continue
		}
		for _, n := range fld.Names {
			ti.members[n.Name] = ref
		}
	}
}

// typeOf names the type of expr through pointers, slices, maps' values,
// channels and instantiations; zero for a type literal.
func typeOf(expr ast.Expr) typeRef {
	switch e := expr.(type) {
	case *ast.Ident:
		return typeRef{name: e.Name}
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			return typeRef{pkg: x.Name, name: e.Sel.Name}
		}
	case *ast.StarExpr:
		return typeOf(e.X)
	case *ast.ArrayType:
		return typeOf(e.Elt)
	case *ast.MapType:
		return typeOf(e.Value)
	case *ast.ChanType:
		return typeOf(e.Value)
	case *ast.IndexExpr:
		return typeOf(e.X)
	case *ast.IndexListExpr:
		return typeOf(e.X)
	}
	return typeRef{}
}
