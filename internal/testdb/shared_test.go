//go:build unix

package testdb

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const envSharedChild = "TXINBOX_TESTDB_SHARED_CHILD"

// TestMain runs the child of TestSharedCluster when asked: it joins (or
// starts) the shared cluster, prints its URL and exits.
func TestMain(m *testing.M) {
	if os.Getenv(envSharedChild) == "" {
		os.Exit(m.Run())
	}
	url, err := sharedURL()
	if err == nil {
		err = ping(url)
	}
	if err == nil && !holdsUsersLock() {
		err = fmt.Errorf("joined the shared cluster without registering as its user")
	}
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Printf("URL=%s\n", url)
	os.Exit(0)
}

// TestSharedCluster: two test processes one after the other share one
// cluster, and the watcher stops it once neither has used it for the
// grace period.
func TestSharedCluster(t *testing.T) {
	if _, err := os.Stat(filepath.Join(pgBin(), "initdb")); err != nil {
		if os.Getenv("TXINBOX_REQUIRE_DB") == "1" {
			t.Fatal(err)
		}
		t.Skip("PostgreSQL server binaries missing: " + err.Error())
	}
	// Not t.TempDir: its parent is private, and postgres must reach dir.
	dir, err := os.MkdirTemp("", "txinbox-testpg-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sharedCluster(dir).Stop("immediate") //nolint:errcheck // normally stopped already
		os.RemoveAll(dir)
	})
	first, second := sharedChild(t, dir), sharedChild(t, dir)
	if first != second {
		t.Fatalf("the second process got %s, the first %s: want one shared cluster", second, first)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, err := os.Stat(filepath.Join(dir, "data"))
		if ping(first) != nil && os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("90s after its last user ended, the shared cluster at %s still answers or its data directory is there", first)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func sharedChild(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envSharedChild+"=1", "TXINBOX_TESTDB_SHARED_DIR="+dir, "TXINBOX_TESTDB_GRACE=3s")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if u, ok := strings.CutPrefix(strings.TrimSpace(line), "URL="); ok {
			return u
		}
	}
	t.Fatalf("child printed no URL:\n%s", out)
	return ""
}
