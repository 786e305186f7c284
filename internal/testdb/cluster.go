package testdb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/txinbox/txinbox/internal/testkit"
)

// DefaultPGBin is where Debian's postgresql-15 package puts the server
// binaries. TXINBOX_PG_BIN overrides it.
const DefaultPGBin = "/usr/lib/postgresql/15/bin"

// Cluster is a private PostgreSQL cluster that one test starts, restarts
// and stops, so that it can take the server down without disturbing the
// shared test database.
type Cluster struct {
	bin  string
	data string
	log  string
	port int
	opts string // the server's options
	// asPostgres runs the binaries through "su postgres": initdb and the
	// server refuse to run as root.
	asPostgres bool
	// killed is set once Kill ended the server: nothing is left to stop.
	killed bool
}

// StartCluster initializes and starts a cluster on a free loopback port
// (fsync off), with its data directory under t.TempDir(), and stops it (immediate mode)
// at cleanup. It skips the test when the binaries, su or the postgres user
// are missing, except under TXINBOX_REQUIRE_DB=1 or CI=true, where it fails.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	c := newCluster(t, func(c *Cluster, dir string) error {
		// t.TempDir's parent is private to root: postgres must pass through.
		return c.initdb(filepath.Dir(dir), dir)
	})
	if err := c.startOnFreePort(50, "-c fsync=off"); err != nil {
		t.Fatal(err)
	}
	return c
}

// newCluster makes a cluster whose data directory is under t.TempDir(),
// filled by create (initdb, or a base backup), and stops it (immediate
// mode) at cleanup, showing its log when the test failed. It skips the
// test when the binaries, su or the postgres user are missing, except
// under TXINBOX_REQUIRE_DB=1 or CI=true, where it fails.
func newCluster(t testing.TB, create func(c *Cluster, dir string) error) *Cluster {
	t.Helper()
	dir := t.TempDir()
	c, err := prepareCluster(dir)
	if err == nil {
		err = create(c, dir)
	}
	var u *unavailableError
	if errors.As(err, &u) {
		msg := "private PostgreSQL cluster unavailable: " + err.Error()
		testkit.Unavailable(t, "TXINBOX_REQUIRE_DB", msg)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.killed {
			return
		}
		if err := c.Stop("immediate"); err != nil {
			t.Logf("stopping the private cluster: %v", err)
		}
		if t.Failed() {
			if b, err := os.ReadFile(c.log); err == nil {
				t.Logf("private cluster log (%s):\n%s", c.data, tail(string(b), 40))
			}
		}
	})
	return c
}

// unavailableError says why this machine cannot run a private cluster.
type unavailableError struct{ reason string }

func (e *unavailableError) Error() string { return e.reason }

// pgBin is the directory of the server binaries.
func pgBin() string {
	if b := os.Getenv("TXINBOX_PG_BIN"); b != "" {
		return b
	}
	return DefaultPGBin
}

// initCluster runs initdb for a cluster whose data directory is dir/data
// (owned by postgres when we are root, who must pass through the
// directories open, made 0711). It does not start it.
func initCluster(dir string, open ...string) (*Cluster, error) {
	c, err := prepareCluster(dir)
	if err == nil {
		err = c.initdb(open...)
	}
	return c, err
}

// prepareCluster checks the binaries and names the data directory
// dir/data, without creating it.
func prepareCluster(dir string) (*Cluster, error) {
	bin := pgBin()
	for _, name := range []string{"initdb", "pg_ctl", "postgres", "pg_basebackup"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			return nil, &unavailableError{fmt.Sprintf("%v (install postgresql-15 or set TXINBOX_PG_BIN)", err)}
		}
	}
	c := &Cluster{bin: bin, data: filepath.Join(dir, "data")}
	// The log lives in the data directory: postgres can write there.
	c.log = filepath.Join(c.data, "server.log")
	return c, nil
}

// initdb creates the data directory (owned by postgres when we are root,
// who must pass through the directories open) and runs initdb.
func (c *Cluster) initdb(open ...string) error {
	if err := c.makeDataDir(open); err != nil {
		return err
	}
	return c.run("initdb", "-D", c.data, "-A", "trust", "-U", "postgres", "--no-locale", "-E", "UTF8", "-N")
}

// makeDataDir creates the empty data directory, 0700, owned by postgres
// when we are root (the directories open made 0711 for it).
func (c *Cluster) makeDataDir(open []string) error {
	if err := os.Mkdir(c.data, 0o700); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		return c.runAsPostgres(open)
	}
	return nil
}

// runAsPostgres prepares running the binaries through su postgres: initdb
// and the server refuse to run as root.
func (c *Cluster) runAsPostgres(open []string) error {
	if _, err := exec.LookPath("su"); err != nil {
		return &unavailableError{"running as root and su is missing: " + err.Error()}
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return &unavailableError{"running as root and there is no postgres user: " + err.Error()}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, d := range open {
		if err := os.Chmod(d, 0o711); err != nil {
			return err
		}
	}
	if err := os.Chown(c.data, uid, gid); err != nil {
		return err
	}
	c.asPostgres = true
	return nil
}

// startOnFreePort starts the server on a free loopback port. The port is
// free when picked but may be taken before the server binds it: it tries
// a few.
// extra are more server options ("-c name=value ...").
func (c *Cluster) startOnFreePort(maxConns int, extra string) error {
	var err error
	for range 3 {
		if c.port, err = freePort(); err != nil {
			return err
		}
		c.opts = fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c max_connections=%d %s", c.port, maxConns, extra)
		if err = c.Start(); err == nil {
			return nil
		}
	}
	return err
}

// URL is the cluster's DSN.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Restart restarts the server with pg_ctl restart -m mode ("smart", "fast"
// or "immediate") and returns once the new server accepts connections. It
// may be called from any goroutine.
func (c *Cluster) Restart(mode string) error {
	return c.run("pg_ctl", "-D", c.data, "-l", c.log, "-w", "-t", "30", "restart", "-m", mode)
}

// Pool returns a pool of at most maxConns connections on the cluster,
// closed at cleanup. Its connections fail while the server is stopped and
// are opened again once it is back.
func (c *Cluster) Pool(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	return openPool(t, c.URL(), "", maxConns)
}

// Stop stops the server with pg_ctl stop -m mode ("smart", "fast" or
// "immediate"); Start starts it again on the same port.
func (c *Cluster) Stop(mode string) error {
	return c.run("pg_ctl", "-D", c.data, "-w", "stop", "-m", mode)
}

// Start starts a stopped server and returns once it accepts connections.
func (c *Cluster) Start() error {
	return c.run("pg_ctl", "-D", c.data, "-l", c.log, "-w", "-t", "30", "start", "-o", c.opts)
}

// run runs one of the cluster's binaries, as postgres when we are root.
func (c *Cluster) run(name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	if c.asPostgres {
		words := []string{shellQuote(path)}
		for _, a := range args {
			words = append(words, shellQuote(a))
		}
		cmd = exec.CommandContext(ctx, "su", "postgres", "-c", strings.Join(words, " "))
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	// The server's own output goes to the log; do not wait on a pipe
	// that a stray child might hold.
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
