//go:build unix

package testdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// StandbyName is the standby's application_name (its cluster_name): the
// name a synchronous primary lists in synchronous_standby_names.
const StandbyName = "txinbox_standby"

// ReplicaPair is a primary and a hot standby streaming from it, two
// private clusters on this machine: what a failover manager (Patroni,
// pg_auto_failover, a managed service) runs, without the manager. The
// test kills the primary (KillPrimary) and promotes the standby
// (Promote) itself.
type ReplicaPair struct {
	Primary, Standby *Cluster
	// Sync says whether the primary waits for the standby's flush before
	// a commit returns (synchronous_standby_names names it).
	Sync bool
}

// StartReplicaPair starts a primary (fsync on, the defaults a production
// server keeps) and a hot standby made by pg_basebackup -R with a
// replication slot, and returns once the standby streams, in sync mode
// when sync is set (synchronous_standby_names on the primary names
// StandbyName; synchronous_commit stays on). The standby starts without
// synchronous_standby_names: once promoted it has no standby of its own,
// and commits there must not wait for one. Like StartCluster, it skips
// (fails under TXINBOX_REQUIRE_DB=1) when no private cluster can run.
func StartReplicaPair(t testing.TB, sync bool) *ReplicaPair {
	t.Helper()
	p := &ReplicaPair{Sync: sync}
	p.Primary = newCluster(t, func(c *Cluster, dir string) error { return c.initdb(filepath.Dir(dir), dir) })
	if err := p.Primary.startOnFreePort(100, ""); err != nil {
		t.Fatal(err)
	}
	p.Standby = newCluster(t, func(c *Cluster, dir string) error {
		if err := c.makeDataDir([]string{filepath.Dir(dir), dir}); err != nil {
			return err
		}
		return c.run("pg_basebackup", "-D", c.data, "-h", "127.0.0.1", "-p", strconv.Itoa(p.Primary.port), "-U", "postgres",
			"-X", "stream", "-R", "-C", "-S", StandbyName)
	})
	// The base backup copied the primary's log: start the standby's
	// afresh.
	os.Remove(p.Standby.log) //nolint:errcheck // may be absent
	if err := p.Standby.startOnFreePort(100, "-c cluster_name="+StandbyName); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if sync {
		err := p.Primary.exec(ctx, "ALTER SYSTEM SET synchronous_standby_names = '"+StandbyName+"'", "SELECT pg_reload_conf()")
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := p.awaitStreaming(ctx); err != nil {
		t.Fatal(err)
	}
	return p
}

// awaitStreaming polls the primary's pg_stat_replication until the
// standby streams, with sync_state "sync" when the pair is synchronous.
func (p *ReplicaPair) awaitStreaming(ctx context.Context) error {
	want := "async"
	if p.Sync {
		want = "sync"
	}
	var state string
	for {
		conn, err := pgx.Connect(ctx, p.Primary.URL())
		if err == nil {
			err = conn.QueryRow(ctx, `SELECT coalesce((SELECT state || '/' || sync_state FROM pg_stat_replication
				WHERE application_name = $1), '')`, StandbyName).Scan(&state)
			conn.Close(ctx) //nolint:errcheck // read only
		}
		if err == nil && state == "streaming/"+want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the standby is not streaming (%s) after a minute: state %q, %v", want, state, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// URL is the multi-host DSN an application uses to find the primary,
// whichever of the two it is: both hosts, target_session_attrs=read-write
// (a connection to a standby is dropped and the next host tried), and a
// connect timeout (a host that does not answer is given up after 2 s).
func (p *ReplicaPair) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		p.Primary.port, p.Standby.port)
}

// Port is the port the cluster listens on: what inet_server_port() says
// in its sessions.
func (c *Cluster) Port() int { return c.port }

// Promote promotes a standby with pg_ctl promote and returns once it
// accepts writes.
func (c *Cluster) Promote() error {
	return c.run("pg_ctl", "-D", c.data, "-w", "-t", "60", "promote")
}

// Kill ends the server the way a machine's death does: the postmaster is
// stopped (so that it neither forks nor restarts anything), then it and
// every process it started receive SIGKILL, microseconds apart: the
// backends and the WAL sender may run that long, no longer. The sessions'
// clients see their connections reset.
func (c *Cluster) Kill() error {
	b, err := os.ReadFile(filepath.Join(c.data, "postmaster.pid"))
	if err != nil {
		return err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return fmt.Errorf("postmaster.pid: %w", err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	c.killed = true
	for _, child := range childrenOf(pid) {
		syscall.Kill(child, syscall.SIGKILL) //nolint:errcheck // it may have exited
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, cut after it.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			kids = append(kids, n)
		}
	}
	return kids
}

// exec runs statements on the cluster, one connection, in order.
func (c *Cluster) exec(ctx context.Context, stmts ...string) error {
	conn, err := pgx.Connect(ctx, c.URL())
	if err != nil {
		return err
	}
	defer conn.Close(ctx) //nolint:errcheck // statements done
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}
