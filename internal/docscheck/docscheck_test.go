// Package docscheck holds a test of the guides: every Go name they quote
// in a code span (`pkg.Name`, `Type.Field`, `pkg.Type.Method`) exists in
// the module, so that a renamed field cannot leave the docs behind.
package docscheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The rule, chosen for few false positives: a code span outside fenced
// blocks that is a dotted name (after a leading * or &, instantiations
// [..], and a trailing call (..) or literal {..} are taken off), whose
// last part is exported, and whose first part is either the name of a
// package of the module (its members then resolve in it) or an exported
// name (a type of some package of the module: `Config.MaxAttempts`).
// Spans like `README.md`, `m.ID` or `kgo.Record` are not Go names of the
// module and are left alone.
var (
	codeSpan   = regexp.MustCompile("`([^`\n]+)`")
	dottedName = regexp.MustCompile(`^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$`)
	typeArgs   = regexp.MustCompile(`\[[^\[\]]*\]`)
	trailer    = regexp.MustCompile(`(\(.*\)|\{.*\})$`)
)

// notOurs are package names of the module that name other packages in
// prose more often than ours (net/http, go.opentelemetry.io/otel); main
// is never quoted as a package.
var notOurs = map[string]bool{"main": true, "http": true, "otel": true}

// allowed are spans that look like Go names of the module and are meant
// otherwise, by doc file.
var allowed = map[string]map[string]bool{
	"docs/as4.md": {"as4.Client": true}, // the name before as4client.Client, quoted as such
}

// finding is a name a doc quotes that does not exist.
type finding struct {
	line      int
	name, why string
}

// span is a Go name quoted in a doc, split into its parts.
type span struct {
	line  int
	text  string
	parts []string
}

// checkDoc returns the names quoted in text (a Markdown file named file)
// that do not resolve in idx.
func checkDoc(idx modIndex, file, text string) []finding {
	spans := idx.goSpans(file, text)
	context := idx.packagesNamed(text)
	for _, s := range spans {
		if !isExported(s.parts[0]) {
			context[s.parts[0]] = true
		}
	}
	var out []finding
	for _, s := range spans {
		if why := idx.resolve(s.parts, context); why != "" {
			out = append(out, finding{line: s.line, name: s.text, why: why})
		}
	}
	return out
}

// packagesNamed returns the root package and those a doc names by their
// directory (`source/jetstream`, `outbox`), by package name.
func (idx modIndex) packagesNamed(text string) map[string]bool {
	named := map[string]bool{"txinbox": true}
	for _, m := range codeSpan.FindAllStringSubmatch(text, -1) {
		if name := idx.atDir(strings.TrimSuffix(m[1], "/")); name != "" {
			named[name] = true
		}
	}
	return named
}

// goSpans returns the code spans of text, outside fenced blocks, that are
// to be checked (see the rule above).
func (idx modIndex) goSpans(file, text string) []span {
	var out []span
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			if parts := goName(m[1]); parts != nil && !allowed[file][m[1]] && idx.candidate(parts) {
				out = append(out, span{line: i + 1, text: m[1], parts: parts})
			}
		}
	}
	return out
}

// goName splits a code span into the parts of a dotted name, nil if it is
// not one.
func goName(span string) []string {
	s := strings.TrimLeft(strings.TrimSpace(span), "*&")
	s = strings.TrimPrefix(s, "[]")
	for typeArgs.MatchString(s) {
		s = typeArgs.ReplaceAllString(s, "")
	}
	s = trailer.ReplaceAllString(s, "")
	if !dottedName.MatchString(s) {
		return nil
	}
	return strings.Split(s, ".")
}

// candidate reports whether parts is to be checked: see the rule above.
func (idx modIndex) candidate(parts []string) bool {
	if !isExported(parts[len(parts)-1]) {
		return false
	}
	if isExported(parts[0]) {
		return true
	}
	_, ours := idx[parts[0]]
	return ours && !notOurs[parts[0]]
}

// docFiles are the guides the test reads: docs/*.md and the README.
func docFiles(root string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	return append(files, filepath.Join(root, "README.md")), err
}

func TestDocNames(t *testing.T) {
	root := filepath.Join("..", "..")
	idx, err := indexModule(root)
	if err != nil {
		t.Fatal(err)
	}
	files, err := docFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, path := range files {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		checked += len(idx.goSpans(filepath.ToSlash(rel), string(text)))
		for _, f := range checkDoc(idx, filepath.ToSlash(rel), string(text)) {
			t.Errorf("%s:%d: `%s`: %s", rel, f.line, f.name, f.why)
		}
	}
	t.Logf("%d Go names checked in %d files", checked, len(files))
}

// TestDocNamesCatches runs the check over a doc made of wrong and right
// names, so that the test above cannot pass by finding nothing.
func TestDocNamesCatches(t *testing.T) {
	idx, err := indexModule(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join([]string{
		"after `Inbox.MaxAttempts` (wrong) or `Config.MaxAttempts` (right)",
		"`Config.Inbox.Effect` (wrong), `txinbox.Config.Effect` and `*txinbox.Config[pgx.Tx]` (right)",
		"`txinbox.NoSuchThing` and `kafka.Config.NoSuchField` (wrong), `kafka.Config.Key` (right)",
		"`txinbox.OffsetCheckpoint.Source` (promoted, right), `txinbox.NewProcessor(driver, cfg)` (right)",
		"```", "`Inbox.Fenced` in a code block", "```",
		"`README.md`, `m.ID`, `kgo.Record.Value`, `pgx.Tx` are not ours",
	}, "\n")
	var got []string
	for _, f := range checkDoc(idx, "catches.md", doc) {
		got = append(got, fmt.Sprintf("%d:%s", f.line, f.name))
	}
	want := []string{"1:Inbox.MaxAttempts", "2:Config.Inbox.Effect", "3:txinbox.NoSuchThing", "3:kafka.Config.NoSuchField"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("found %v, want %v", got, want)
	}
}
