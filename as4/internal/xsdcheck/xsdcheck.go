// Package xsdcheck validates the endpoint's and the client's SOAP
// envelopes against the official SOAP 1.1/1.2, OASIS ebMS 3.0 header,
// ebBP signals and XML Signature schemas kept in as4/testdata/schemas, with
// xmllint (libxml2). It is for tests only.
package xsdcheck

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// SchemaDir returns the directory of the checked-in schemas.
func SchemaDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "schemas")
}

// Required reports whether a missing xmllint must fail the test instead of
// skipping it: TXINBOX_REQUIRE_XMLLINT=1 or CI=true.
func Required() bool {
	return os.Getenv("TXINBOX_REQUIRE_XMLLINT") == "1" || os.Getenv("CI") == "true"
}

// Present reports whether xmllint is on PATH.
func Present() bool {
	_, err := exec.LookPath("xmllint")
	return err == nil
}

// Available reports whether xmllint is on PATH; when it is not, it fails t
// if Required, else skips it.
func Available(t testing.TB) {
	t.Helper()
	if !Present() {
		if Required() {
			t.Fatalf("xmllint is required (TXINBOX_REQUIRE_XMLLINT=1 or CI=true) but not on PATH: install libxml2-utils")
		}
		t.Skip("xmllint not on PATH (install libxml2-utils); schema validation skipped")
	}
}

// Validate fails t unless doc, a SOAP envelope, is valid against the
// schemas. what names the document in the failure.
func Validate(t testing.TB, what string, doc []byte) {
	t.Helper()
	if err := Check(t, doc); err != nil {
		t.Errorf("%s is not valid against the SOAP/ebMS schemas: %v\n%s", what, err, doc)
	}
}

// Check returns xmllint's complaint about doc, or nil if doc is valid. It
// skips or fails t as Available does when xmllint is missing.
func Check(t testing.TB, doc []byte) error {
	t.Helper()
	Available(t)
	cmd := exec.Command("xmllint", "--noout", "--nonet", "--schema", filepath.Join(SchemaDir(), "as4-signals.xsd"), "-")
	cmd.Stdin = bytes.NewReader(doc)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 5:
		t.Fatalf("the schemas in %s do not compile: %s", SchemaDir(), out.String())
	case err != nil:
		return &Error{Output: out.String(), Err: err}
	}
	return nil
}

// Error is xmllint's verdict on an invalid document.
type Error struct {
	Output string
	Err    error
}

// Error returns xmllint's output.
func (e *Error) Error() string { return e.Err.Error() + ": " + e.Output }
