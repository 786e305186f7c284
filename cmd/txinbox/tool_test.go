package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// recipeHeading is the README section whose first sh block says how to run
// the CLI from one's own module.
const recipeHeading = "## The CLI in your own module"

// TestToolFromOwnModule runs the README's recipe for the CLI in one's own
// module, line by line, in a new module that requires txinbox through a
// replace of this checkout (standing in for go get), as a user would:
// without GOFLAGS, so that go.sum is written only by the recipe. Each
// --db is given a SQLite file instead. It checks the README's warning too:
// go run of the CLI fails in such a module. The go commands use the module
// proxy for modules missing from the module cache; the first build of the
// CLI without -race takes minutes, hence the skip in -short.
func TestToolFromOwnModule(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: building the CLI in a new module may take minutes")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := newModule(t, root)
	if out, err := goCommand(dir, "go run github.com/txinbox/txinbox/cmd/txinbox version"); err == nil ||
		!strings.Contains(out, "missing go.sum entry") {
		t.Errorf("go run of the CLI before the recipe: %v, want it to fail with missing go.sum entries (as the README says)\n%s", err, out)
	}
	db := filepath.Join(t.TempDir(), "inbox.db")
	for _, line := range readmeRecipe(t, filepath.Join(root, "README.md")) {
		line = regexp.MustCompile(`--db \S+`).ReplaceAllString(line, "--db "+db)
		if out, err := goCommand(dir, line); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	out, err := goCommand(dir, "go tool txinbox version")
	if err != nil || !strings.HasPrefix(out, "txinbox ") {
		t.Errorf("go tool txinbox version: %v\n%s", err, out)
	}
	if out, err := goCommand(dir, "go tool txinbox status --db "+db); err != nil || !strings.Contains(out, "inbox rows") {
		t.Errorf("go tool txinbox status on the migrated inbox: %v\n%s", err, out)
	}
}

// newModule writes a module that requires txinbox v0.0.0, replaced by the
// checkout at root, with root's go version, and returns its directory.
func newModule(t *testing.T, root string) string {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go \S+$`).Find(mod)
	dir := t.TempDir()
	gomod := "module example.com/billing\n\n" + string(goLine) + "\n\nrequire github.com/txinbox/txinbox v0.0.0\n\n" +
		"replace github.com/txinbox/txinbox => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readmeRecipe returns the command lines, without comments, of the first sh
// block under recipeHeading in the README at path.
func readmeRecipe(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	section, block := false, false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section = line == recipeHeading
		case section && !block && line == "```sh":
			block = true
		case block && line == "```":
			return lines
		case block:
			if cmd, _, _ := strings.Cut(line, " #"); strings.TrimSpace(cmd) != "" {
				lines = append(lines, strings.TrimSpace(cmd))
			}
		}
	}
	t.Fatalf("%s: no sh block under %q", path, recipeHeading)
	return nil
}

// goCommand runs a command line (words separated by spaces, no quoting) in
// dir, with GOFLAGS empty and no workspace, and returns its output.
func goCommand(dir, line string) (string, error) {
	words := strings.Fields(line)
	cmd := exec.Command(words[0], words[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	return string(out), err
}
