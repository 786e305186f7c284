package brokers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// programName is the brokers program's file name.
const programName = "txinbox-brokers"

// modulePath is this module's path, to recognize its source tree.
const modulePath = "github.com/txinbox/txinbox"

// program finds txinbox-brokers, or builds it into a temporary directory;
// cleanup removes what it built.
func program(ctx context.Context, progress io.Writer) (path string, cleanup func(), err error) {
	if p := os.Getenv("TXINBOX_BROKERS_BIN"); p != "" {
		return p, func() {}, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), programName)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, func() {}, nil
		}
	}
	if p, err := exec.LookPath(programName); err == nil {
		return p, func() {}, nil
	}
	root, ok := moduleRoot()
	if _, err := exec.LookPath("go"); !ok || err != nil {
		return "", nil, errors.New("brokers: " + programName + " not found: install it next to txinbox or on $PATH " +
			"(go install " + modulePath + "/cmd/" + programName + "@latest), set TXINBOX_BROKERS_BIN, " +
			"or run from the txinbox source tree with go on $PATH")
	}
	return build(ctx, root, progress)
}

// build compiles cmd/txinbox-brokers of the module at root.
func build(ctx context.Context, root string, progress io.Writer) (string, func(), error) {
	dir, err := os.MkdirTemp("", programName+"-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	if progress != nil {
		fmt.Fprintf(progress, "building %s with go build (the first build takes about a minute)\n", programName)
	}
	out := filepath.Join(dir, programName)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/"+programName)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("brokers: go build ./cmd/%s in %s: %w\n%s", programName, root, err, b)
	}
	return out, cleanup, nil
}

// moduleRoot walks up from the working directory to the go.mod of this
// module.
func moduleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if isModuleRoot(dir) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func isModuleRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "module ") {
			return strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "module")), `"`) == modulePath
		}
	}
	return false
}
