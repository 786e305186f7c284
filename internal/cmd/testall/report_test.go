package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// stream is what go test -json prints for a package with a passing, a
// failing and two skipped tests, and a package without tests.
const stream = `{"Action":"start","Package":"example.com/a"}
{"Action":"run","Package":"example.com/a","Test":"TestOK"}
{"Action":"output","Package":"example.com/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"example.com/a","Test":"TestOK","Output":"    a_test.go:9: chatter of a passing test\n"}
{"Action":"pass","Package":"example.com/a","Test":"TestOK"}
{"Action":"output","Package":"example.com/a","Test":"TestDB","Output":"=== RUN   TestDB\n"}
{"Action":"output","Package":"example.com/a","Test":"TestDB","Output":"    testdb.go:40: PostgreSQL not reachable at postgres://x\n"}
{"Action":"output","Package":"example.com/a","Test":"TestDB","Output":"--- SKIP: TestDB (0.00s)\n"}
{"Action":"skip","Package":"example.com/a","Test":"TestDB"}
{"Action":"output","Package":"example.com/a","Test":"TestDB2","Output":"    testdb.go:40: PostgreSQL not reachable at postgres://x\n"}
{"Action":"skip","Package":"example.com/a","Test":"TestDB2"}
{"Action":"output","Package":"example.com/a","Test":"TestBad","Output":"=== RUN   TestBad\n"}
{"Action":"output","Package":"example.com/a","Test":"TestBad","Output":"    a_test.go:20: got 1, want 2\n"}
{"Action":"output","Package":"example.com/a","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"example.com/a","Test":"TestBad"}
{"Action":"output","Package":"example.com/a","Output":"FAIL\n"}
{"Action":"output","Package":"example.com/a","Output":"FAIL\texample.com/a\t0.01s\n"}
{"Action":"fail","Package":"example.com/a"}
{"Action":"output","Package":"example.com/b","Output":"?   \texample.com/b\t[no test files]\n"}
{"Action":"skip","Package":"example.com/b"}
not json: printed as it is
`

func TestReport(t *testing.T) {
	var out strings.Builder
	r := newReport(&out)
	r.read(strings.NewReader(stream))
	if n := r.printSkips(); n != 2 {
		t.Errorf("printSkips = %d, want 2", n)
	}
	got := out.String()
	for _, want := range []string{
		"    a_test.go:20: got 1, want 2\n--- FAIL: TestBad (0.00s)\nFAIL\nFAIL\texample.com/a\t0.01s\n",
		"?   \texample.com/b\t[no test files]\n",
		"not json: printed as it is\n",
		"SKIP\texample.com/a\t2 of 4 tests: 2: PostgreSQL not reachable at postgres://x\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"chatter of a passing test", "=== RUN", "example.com/b\t0 of"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("output has %q:\n%s", unwanted, got)
		}
	}
}

func TestRunKeepsExitCodeAndFailsSkipsUnderCI(t *testing.T) {
	// The package of this test, run for real with a pattern that matches
	// nothing: go test passes, nothing skips.
	var out, errs strings.Builder
	if code := run([]string{"-run", "^$", "."}, os.Environ(), &out, &errs, true); code != 0 {
		t.Fatalf("exit %d, want 0\n%s%s", code, out.String(), errs.String())
	}
	out.Reset()
	if code := run([]string{"./no-such-package"}, os.Environ(), &out, &errs, false); code == 0 {
		t.Fatalf("exit 0 for a missing package\n%s", out.String())
	}
}

// TestSkipProbe skips when TestRunFailsSkipsUnderCI runs it.
func TestSkipProbe(t *testing.T) {
	if os.Getenv("TESTALL_SKIP_PROBE") == "1" {
		t.Skip("probe for TestRunFailsSkipsUnderCI")
	}
}

func TestRunFailsSkipsUnderCI(t *testing.T) {
	t.Setenv("TESTALL_SKIP_PROBE", "1")
	for _, ci := range []bool{false, true} {
		var out, errs strings.Builder
		code := run([]string{"-run", "^TestSkipProbe$", "."}, os.Environ(), &out, &errs, ci)
		if want := map[bool]int{false: 0, true: 1}[ci]; code != want {
			t.Errorf("CI=%v: exit %d, want %d\n%s%s", ci, code, want, out.String(), errs.String())
		}
		if !strings.Contains(out.String(), "1 of 1 tests: 1: probe for TestRunFailsSkipsUnderCI") {
			t.Errorf("CI=%v: no skip line:\n%s", ci, out.String())
		}
	}
}

func TestNotApplicableSkips(t *testing.T) {
	const s = `{"Action":"output","Package":"p","Test":"TestA","Output":"    suite.go:9: SQS does not declare the feature this test needs\n"}
{"Action":"skip","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    testdb.go:9: no PostgreSQL\n"}
{"Action":"skip","Package":"p","Test":"TestB"}
`
	r := newReport(&strings.Builder{})
	r.read(strings.NewReader(s))
	if n := r.printSkips(); n != 1 {
		t.Errorf("printSkips = %d, want 1: the conformance skip does not apply, the missing database counts", n)
	}
}

// TestReportCrashedTest: a test binary that exits in the middle of a test
// sends no fail event for it; its output still reaches the report.
func TestReportCrashedTest(t *testing.T) {
	const crashed = `{"Action":"run","Package":"example.com/c","Test":"TestExit"}
{"Action":"output","Package":"example.com/c","Test":"TestExit","Output":"=== RUN   TestExit\n"}
{"Action":"output","Package":"example.com/c","Test":"TestExit","Output":"    c_test.go:7: about to exit\n"}
{"Action":"output","Package":"example.com/c","Output":"FAIL\texample.com/c\t0.01s\n"}
{"Action":"fail","Package":"example.com/c"}
`
	var out strings.Builder
	newReport(&out).read(strings.NewReader(crashed))
	if got := out.String(); !strings.Contains(got, "c_test.go:7: about to exit") || strings.Contains(got, "=== RUN") {
		t.Errorf("the crashed test's output is not reported (or with its progress line):\n%s", got)
	}
}

// The README's test command also tests the modules nested under
// examples/, whose dependencies stay out of the library's go.mod.
func TestNestedModulesFound(t *testing.T) {
	dirs := nestedModules("../../../examples")
	if !slices.Contains(dirs, filepath.Join("../../../examples", "stacks")) {
		t.Errorf("nested modules %v, want examples/stacks among them", dirs)
	}
}
