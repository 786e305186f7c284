package docscheck

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
)

// resolve checks a dotted Go name quoted in a doc: "" when it exists (or
// leads outside the module, where it cannot be checked), else why not. A
// name that starts with a type (`Config.MaxAttempts`) is looked up in the
// packages named in context only: the root package and those the doc
// quotes (`kafka.Config` makes `Config.Key` kafka's or the root's).
func (idx modIndex) resolve(parts []string, context map[string]bool) string {
	if pkgs, ok := idx[parts[0]]; ok && !isExported(parts[0]) {
		why := ""
		for _, p := range pkgs {
			if why = idx.inPackage(p, parts[1:]); why == "" {
				return ""
			}
		}
		return why
	}
	why := fmt.Sprintf("no type %s in the packages the doc names (%s)", parts[0], strings.Join(slices.Sorted(maps.Keys(context)), ", "))
	for name, pkgs := range idx {
		for _, p := range pkgs {
			if !context[name] || p.types[parts[0]] == nil {
				continue
			}
			if why = idx.chain(p, typeRef{name: parts[0]}, parts[1:]); why == "" {
				return ""
			}
		}
	}
	return why
}

// inPackage resolves parts (a declaration, then members) in package p.
func (idx modIndex) inPackage(p *pkgIndex, parts []string) string {
	ref, ok := p.decls[parts[0]]
	switch {
	case !ok:
		return fmt.Sprintf("package %s has no %s", p.name, parts[0])
	case len(parts) == 1:
		return ""
	case p.types[parts[0]] != nil:
		return idx.chain(p, typeRef{name: parts[0]}, parts[1:])
	default: // a variable: through its type, when written
		return idx.chain(p, ref, parts[1:])
	}
}

// chain resolves the members parts of type t, seen from package p.
func (idx modIndex) chain(p *pkgIndex, t typeRef, parts []string) string {
	for _, name := range parts {
		tp, ti := idx.lookupType(p, t)
		if ti == nil {
			return "" // outside the module, or not a named type: not checked
		}
		next, owner, found := idx.member(tp, ti, name, 0)
		if !found {
			return fmt.Sprintf("%s.%s has no field or method %s", tp.name, t.name, name)
		}
		p, t = owner, next
	}
	return ""
}

// lookupType finds type t seen from package p: nil when it is not a type
// of the module.
func (idx modIndex) lookupType(p *pkgIndex, t typeRef) (*pkgIndex, *typeInfo) {
	if t.name == "" {
		return nil, nil
	}
	if t.pkg == "" {
		return p, p.types[t.name]
	}
	for _, q := range idx[t.pkg] {
		if ti := q.types[t.name]; ti != nil {
			return q, ti
		}
	}
	return nil, nil
}

// member finds a field or method of a type, promoted ones included. found
// is also true when an embedded type lies outside the module: what it
// promotes cannot be checked.
func (idx modIndex) member(p *pkgIndex, ti *typeInfo, name string, depth int) (ref typeRef, owner *pkgIndex, found bool) {
	if ref, ok := ti.members[name]; ok {
		return ref, p, true
	}
	if depth > 5 {
		return typeRef{}, nil, false
	}
	for _, e := range ti.embedded {
		ep, eti := idx.lookupType(p, e)
		if eti == nil {
			return typeRef{}, nil, true
		}
		if ref, owner, ok := idx.member(ep, eti, name, depth+1); ok {
			return ref, owner, true
		}
	}
	return typeRef{}, nil, false
}

func isExported(name string) bool {
	for _, r := range name {
		return unicode.IsUpper(r)
	}
	return false
}
