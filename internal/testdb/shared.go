//go:build unix

package testdb

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The shared throwaway cluster: when no TXINBOX_TEST_DATABASE_URL is set
// and nothing answers at DefaultURL, the first test process of a run that
// needs PostgreSQL starts a cluster under os.TempDir()/txinbox-testpg-UID,
// and the other processes (go test runs packages in parallel) reuse it.
//
// Two lock files coordinate them. "lock" is held exclusively while a
// process checks, starts or stops the cluster. "users" is held shared by
// every test process that uses the cluster, for its whole life: the kernel
// drops the lock when the process ends, however it ends. A watcher process
// (the test binary re-executed with envWatch set) polls: under "lock", it
// tries "users" exclusively; once that succeeds for sharedGrace in a row
// (no test process has used the cluster for that long), it stops the
// cluster and exits. A process can never be between "the cluster is up"
// and "I hold users" while the watcher decides, because both steps happen
// under "lock".

// envWatch makes a test binary the shared cluster's watcher.
const envWatch = "TXINBOX_TESTDB_WATCH"

// sharedGrace is how long the cluster outlives its last user: long enough
// for go test to build and start the next package's binary.
// TXINBOX_TESTDB_GRACE (a duration) overrides it, for testdb's own tests.
func sharedGrace() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("TXINBOX_TESTDB_GRACE")); err == nil {
		return d
	}
	return 20 * time.Second
}

// sharedMaxConns: the crash and concurrency tests of several packages open
// many pools at once.
const sharedMaxConns = 300

// usersLock is the shared lock this process holds on "users"; a package
// variable so that the file is never collected (and closed), and read by
// holdsUsersLock.
var usersLock *os.File

// holdsUsersLock says whether this process uses the shared cluster.
func holdsUsersLock() bool { return usersLock != nil }

func init() {
	if dir := os.Getenv(envWatch); dir != "" {
		watch(dir)
		os.Exit(0)
	}
}

// sharedDir is the shared cluster's directory (TXINBOX_TESTDB_SHARED_DIR
// overrides it, for testdb's own tests).
func sharedDir() string {
	if d := os.Getenv("TXINBOX_TESTDB_SHARED_DIR"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("txinbox-testpg-%d", os.Geteuid()))
}

// sharedURL returns the URL of the shared cluster, starting it when none
// runs, and registers this process as a user.
func sharedURL() (string, error) {
	dir := sharedDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(dir, "lock"), syscall.LOCK_EX)
	if err != nil {
		return "", err
	}
	defer unlock()
	port, err := runningPort(dir)
	if err != nil {
		if port, err = startShared(dir); err != nil {
			return "", err
		}
	}
	if err := ensureWatcher(dir); err != nil {
		return "", err
	}
	f, err := os.OpenFile(filepath.Join(dir, "users"), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH)
	}
	if err != nil {
		return "", fmt.Errorf("registering as a user of the shared cluster: %w", err)
	}
	usersLock = f
	return clusterURL(port), nil
}

func clusterURL(port int) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
}

// runningPort is the port of the shared cluster if it runs and answers.
func runningPort(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "port"))
	if err != nil {
		return 0, err
	}
	port, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, err
	}
	return port, ping(clusterURL(port))
}

// startShared initializes and starts a fresh cluster in dir, after
// stopping and removing what a previous one left.
func startShared(dir string) (int, error) {
	old := sharedCluster(dir)
	if _, err := os.Stat(old.data); err == nil {
		old.Stop("immediate") //nolint:errcheck // it may be long gone
		if err := os.RemoveAll(old.data); err != nil {
			return 0, err
		}
	}
	os.Remove(filepath.Join(dir, "port"))
	c, err := initCluster(dir, dir)
	if err != nil {
		return 0, err
	}
	if err := c.startOnFreePort(sharedMaxConns, "-c fsync=on"); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, "port"), []byte(strconv.Itoa(c.port)), 0o600); err != nil {
		c.Stop("immediate") //nolint:errcheck // the write error matters
		return 0, err
	}
	return c.port, nil
}

// sharedCluster is the cluster in dir, to stop it.
func sharedCluster(dir string) *Cluster {
	return &Cluster{bin: pgBin(), data: filepath.Join(dir, "data"), asPostgres: os.Geteuid() == 0}
}

// ensureWatcher starts the watcher unless the one recorded in dir lives.
func ensureWatcher(dir string) error {
	pidFile := filepath.Join(dir, "watcher.pid")
	if b, err := os.ReadFile(pidFile); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && syscall.Kill(pid, 0) == nil {
			return nil
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	// A session of its own, no stdio: go test must not wait for it, and
	// its end of a test binary must not end it.
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envWatch+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the shared cluster's watcher: %w", err)
	}
	go cmd.Wait() //nolint:errcheck // reaps it if this process outlives it
	return os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
}

// watch stops the shared cluster in dir once no test process has used it
// for sharedGrace, then returns.
func watch(dir string) {
	var idleSince time.Time
	for {
		time.Sleep(time.Second)
		done, err := watchOnce(dir, &idleSince)
		if done || err != nil {
			return
		}
	}
}

// watchOnce is one look, under "lock": it stops the cluster when it has
// been idle long enough, and says whether the watch is over.
func watchOnce(dir string, idleSince *time.Time) (bool, error) {
	unlock, err := lockFile(filepath.Join(dir, "lock"), syscall.LOCK_EX)
	if err != nil {
		return true, err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "port")); err != nil {
		return true, nil // stopped by someone else
	}
	release, err := lockFile(filepath.Join(dir, "users"), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		*idleSince = time.Time{}
		return false, nil
	}
	if err != nil {
		return true, err
	}
	defer release()
	if idleSince.IsZero() {
		*idleSince = time.Now()
	}
	if time.Since(*idleSince) < sharedGrace() {
		return false, nil
	}
	c := sharedCluster(dir)
	c.Stop("immediate") //nolint:errcheck // removed below either way
	os.Remove(filepath.Join(dir, "port"))
	os.RemoveAll(c.data)
	return true, nil
}

// lockFile takes flock how on path (created if missing); unlock releases
// it and closes the file.
func lockFile(path string, how int) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
