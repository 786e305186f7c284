package main

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output events
}

// report turns the event stream into go test's usual lines and counts the
// skips.
type report struct {
	w       io.Writer
	outputs map[string][]string // package + "\x00" + test -> its output lines
	pkgs    map[string]*pkgTally
}

// pkgTally counts one package's tests and the reasons of its skips.
type pkgTally struct {
	tests, skipped int
	notApplicable  int // skips whose reason notApplicable matches
	reasons        map[string]int
}

//go:embed not_applicable.txt
var notApplicableList string

// notApplicable matches the skip reasons that say a test does not apply
// (not_applicable.txt).
var notApplicable = func() *regexp.Regexp {
	var res []string
	for line := range strings.Lines(notApplicableList) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			res = append(res, "(?:"+line+")")
		}
	}
	return regexp.MustCompile(strings.Join(res, "|"))
}()

func newReport(w io.Writer) *report {
	return &report{w: w, outputs: map[string][]string{}, pkgs: map[string]*pkgTally{}}
}

// read handles the stream to its end; a line that is not JSON is printed
// as it is.
func (r *report) read(in io.Reader) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Action == "" {
			fmt.Fprintln(r.w, sc.Text())
			continue
		}
		r.handle(ev)
	}
}

func (r *report) handle(ev event) {
	if ev.Action == "build-output" {
		fmt.Fprint(r.w, ev.Output)
		return
	}
	if ev.Test == "" {
		// Package level: the ok/FAIL/no-test-files lines go test prints.
		if ev.Action == "output" && ev.Output != "PASS\n" {
			fmt.Fprint(r.w, ev.Output)
		}
		if ev.Action == "fail" {
			r.printUnfinished(ev.Package)
		}
		return
	}
	key := ev.Package + "\x00" + ev.Test
	switch ev.Action {
	case "output":
		r.outputs[key] = append(r.outputs[key], ev.Output)
	case "pass", "fail", "skip":
		t := r.tally(ev.Package)
		t.tests++
		if ev.Action == "fail" {
			r.printFailure(r.outputs[key])
		}
		if ev.Action == "skip" {
			reason := skipReason(r.outputs[key])
			t.skipped++
			t.reasons[reason]++
			if notApplicable.MatchString(reason) {
				t.notApplicable++
			}
		}
		delete(r.outputs, key)
	}
}

// printUnfinished prints the output of pkg's tests that never ended: the
// test binary exited or crashed in the middle of them, and go test sends
// no fail event for the test itself.
func (r *report) printUnfinished(pkg string) {
	var keys []string
	for k := range r.outputs {
		if strings.HasPrefix(k, pkg+"\x00") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		r.printFailure(r.outputs[k])
		delete(r.outputs, k)
	}
}

func (r *report) tally(pkg string) *pkgTally {
	t := r.pkgs[pkg]
	if t == nil {
		t = &pkgTally{reasons: map[string]int{}}
		r.pkgs[pkg] = t
	}
	return t
}

// printFailure prints a failed test's output as plain go test does: without
// the === progress lines.
func (r *report) printFailure(lines []string) {
	for _, l := range lines {
		if !strings.HasPrefix(l, "=== ") {
			fmt.Fprint(r.w, l)
		}
	}
}

// logLine is a t.Log/t.Skip line: "    file_test.go:12: text".
var logLine = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: (.*)$`)

// skipReason is the first logged line of a skipped test, usually the
// t.Skip message.
func skipReason(lines []string) string {
	for _, l := range lines {
		if m := logLine.FindStringSubmatch(strings.TrimRight(l, "\n")); m != nil {
			return m[1]
		}
	}
	return "no reason given"
}

// maxReason caps a reason's length in the summary.
const maxReason = 200

// printSkips prints one line per package that skipped tests and returns
// how many skipped tests could not run (the skips not_applicable.txt does
// not excuse).
func (r *report) printSkips() (couldNotRun int) {
	var pkgs []string
	total := 0
	for p, t := range r.pkgs {
		if t.skipped > 0 {
			pkgs = append(pkgs, p)
			total += t.skipped
			couldNotRun += t.skipped - t.notApplicable
		}
	}
	if total == 0 {
		return 0
	}
	slices.Sort(pkgs)
	fmt.Fprintf(r.w, "\nSKIPPED: %d tests did not run (%d of them do not apply); a skipped suite is not a passed one:\n", total, total-couldNotRun)
	for _, p := range pkgs {
		t := r.pkgs[p]
		fmt.Fprintf(r.w, "SKIP\t%s\t%d of %d tests: %s\n", p, t.skipped, t.tests, formatReasons(t.reasons))
	}
	return couldNotRun
}

// formatReasons lists the reasons, most frequent first, each after its
// count.
func formatReasons(reasons map[string]int) string {
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if reasons[a] != reasons[b] {
			return reasons[b] - reasons[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		text := k
		if len(text) > maxReason {
			text = text[:maxReason] + "..."
		}
		parts[i] = fmt.Sprintf("%d: %s", reasons[k], text)
	}
	return strings.Join(parts, "; ")
}
