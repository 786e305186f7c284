// Package testsamples is test support for the EDI packages: it locates the
// shared sample files, which live outside the module in ../shared/edi/samples
// relative to the repository root and are never copied into the project, and
// it generates large inputs and measures the memory parsing them takes.
package testsamples

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Find returns the samples directory, or false if it does not exist.
func Find() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			s := filepath.Join(dir, "..", "shared", "edi", "samples")
			if fi, err := os.Stat(s); err == nil && fi.IsDir() {
				return s, true
			}
			return "", false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// Dir returns the samples directory or skips the test, saying why.
func Dir(tb testing.TB) string {
	tb.Helper()
	dir, ok := Find()
	if !ok {
		tb.Skip("EDI samples not found: expected ../shared/edi/samples next to the repository root (they are not part of the module)")
	}
	return dir
}

// Manifest returns the sample paths listed in MANIFEST.tsv (first column,
// relative to the samples directory).
func Manifest(dir string) ([]string, error) {
	f, err := os.Open(filepath.Join(dir, "MANIFEST.tsv"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for first := true; sc.Scan(); first = false {
		line := sc.Text()
		if first || strings.TrimSpace(line) == "" {
			continue // header row
		}
		name, _, _ := strings.Cut(line, "\t")
		names = append(names, name)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, errors.New("MANIFEST.tsv lists no files")
	}
	return names, nil
}

// Seeds returns the contents of the listed samples whose path has one of
// the given prefixes, for fuzz seeding. It returns nothing when the samples
// are missing: fuzz targets then run on their inline seeds only.
func Seeds(prefixes ...string) [][]byte {
	dir, ok := Find()
	if !ok {
		return nil
	}
	names, err := Manifest(dir)
	if err != nil {
		return nil
	}
	var out [][]byte
	for _, n := range names {
		for _, p := range prefixes {
			if strings.HasPrefix(n, p) {
				if b, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
					out = append(out, b)
				}
				break
			}
		}
	}
	return out
}
