// Command testall is the README's test command: it runs
//
//	go test -race -json ./...
//
// (or go test -race -json ARGS... when given arguments), and without
// arguments the same in every module nested under examples/ (one with a
// go.mod of its own: examples/stacks), prints what plain
// go test prints (an ok or FAIL line per package, and the output of the
// tests that failed), then one line per package that skipped tests, saying
// how many and why, so that a suite skipped for want of a server is never
// mistaken for one that passed. Its exit code is go test's. Under CI=true
// a skipped test fails the run (CI provides every server and tool), unless
// its reason says it does not apply (not_applicable.txt: a conformance test
// of a feature the source does not declare).
//
// Without TXINBOX_TEST_DATABASE_URL it finds the test database as the tests
// would (internal/testdb: the server on port 54329, else a throwaway
// cluster from the installed PostgreSQL binaries) and passes it to every
// test process, so that one throwaway cluster serves the whole run.
//
//	go run ./internal/cmd/testall
//	go run ./internal/cmd/testall ./store/... -run Purge
package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/txinbox/txinbox/internal/testdb"
)

func main() {
	env := os.Environ()
	if os.Getenv("TXINBOX_TEST_DATABASE_URL") == "" {
		if url, err := testdb.Server(); err == nil {
			env = append(env, "TXINBOX_TEST_DATABASE_URL="+url)
		} else {
			fmt.Fprintln(os.Stderr, "testall: no PostgreSQL for the tests, they will skip:", err)
		}
	}
	os.Exit(run(os.Args[1:], env, os.Stdout, os.Stderr, os.Getenv("CI") == "true"))
}

// run runs go test with env and reports; it returns the exit code.
// Without arguments it tests ./... of the main module, then ./... of
// every module nested under examples/ (a directory with a go.mod of its
// own, whose dependencies stay out of the library's go.mod), all in one
// report.
func run(args, env []string, stdout, stderr io.Writer, ci bool) int {
	dirs := []string{""}
	if len(args) == 0 {
		args = []string{"./..."}
		dirs = append(dirs, nestedModules("examples")...)
	}
	r := newReport(stdout)
	code := 0
	for _, dir := range dirs {
		code = max(code, goTest(dir, args, env, r, stderr))
	}
	if r.printSkips() > 0 && ci {
		fmt.Fprintln(stdout, "FAIL: CI=true and tests skipped: CI provides every server and tool, so only tests that do not apply may skip there")
		code = max(code, 1)
	}
	return code
}

// goTest runs go test -race -json args in dir ("" for the current
// directory) into r and returns its exit code.
func goTest(dir string, args, env []string, r *report, stderr io.Writer) int {
	cmd := exec.Command("go", append([]string{"test", "-race", "-json"}, args...)...)
	cmd.Dir = dir
	cmd.Stderr = stderr
	cmd.Env = env
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "testall:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "testall: go test:", err)
		return 1
	}
	r.read(pipe)
	return exitCode(cmd.Wait(), stderr)
}

// nestedModules returns the directories under root that hold a go.mod.
func nestedModules(root string) []string {
	var dirs []string
	_ = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && e.Name() == "go.mod" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	return dirs
}

// exitCode is go test's exit code.
func exitCode(err error, stderr io.Writer) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return max(ee.ExitCode(), 1)
	default:
		fmt.Fprintln(stderr, "testall: go test:", err)
		return 1
	}
}
