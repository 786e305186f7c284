package httpinbox_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/httpinbox"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/store/mysqlstore"
	"github.com/txinbox/txinbox/store/pgstore"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// The child process: a server of the orders route on an existing inbox,
// which prints its address. With childKill set, it SIGKILLs itself at
// the first byte of its first answer: after the commit (the middleware
// writes nothing before), before the client got anything.
const (
	childPG   = "HTTPINBOX_TEST_CHILD_PG_SCHEMA"
	childLite = "HTTPINBOX_TEST_CHILD_SQLITE"
	childMy   = "HTTPINBOX_TEST_CHILD_MYSQL_URL"
	childKill = "HTTPINBOX_TEST_CHILD_KILL_AFTER_COMMIT"
)

func TestMain(m *testing.M) {
	if schema := os.Getenv(childPG); schema != "" {
		pool, err := pgxPool(schema)
		if err == nil {
			var d *pgstore.Driver
			if d, err = pgstore.New(pool, pgstore.Options{Schema: schema}); err == nil {
				err = childServe(d, pgEffect)
			}
		}
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	if path := os.Getenv(childLite); path != "" {
		d, err := sqlitestore.Open(path, sqlitestore.Options{})
		if err == nil {
			err = childServe(d, liteEffect)
		}
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	if url := os.Getenv(childMy); url != "" {
		db, err := mysqlstore.Open(url)
		if err == nil {
			var d *mysqlstore.Driver
			if d, err = mysqlstore.New(db, mysqlstore.Options{}); err == nil {
				err = childServe(d, myEffect)
			}
		}
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func pgxPool(schema string) (*pgxpool.Pool, error) {
	sep := "?"
	if strings.Contains(testdb.URL(), "?") {
		sep = "&"
	}
	return pgxpool.New(context.Background(), testdb.URL()+sep+"search_path="+schema)
}

func pgEffect(ctx context.Context, tx pgx.Tx, k string) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO effects (k) VALUES ($1) RETURNING id`, k).Scan(&id)
	return id, err
}

func liteEffect(ctx context.Context, tx *sql.Tx, k string) (int64, error) {
	var id int64
	err := tx.QueryRowContext(ctx, `INSERT INTO effects (k) VALUES (?) RETURNING id`, k).Scan(&id)
	return id, err
}

func childServe[TTx any](d store.Driver[TTx], effect func(context.Context, TTx, string) (int64, error)) error {
	in, err := httpinbox.New(d, httpinbox.Config[TTx]{})
	if err != nil {
		return err
	}
	rh, err := in.Handler(httpinbox.Route[TTx]{Name: "orders"}, ordersHandler(effect))
	if err != nil {
		return err
	}
	var h http.Handler = rh
	if os.Getenv(childKill) != "" {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rh.ServeHTTP(killAtFirstByte{w}, r)
		})
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(l.Addr().String())
	return http.Serve(l, h)
}

// killAtFirstByte kills the process when the first answer is about to be
// written.
type killAtFirstByte struct{ http.ResponseWriter }

func (k killAtFirstByte) WriteHeader(code int) {
	syscall.Kill(os.Getpid(), syscall.SIGKILL) //nolint:errcheck
	time.Sleep(time.Minute)                    // the signal lands first
}

func (k killAtFirstByte) Write(b []byte) (int, error) {
	k.WriteHeader(http.StatusOK)
	return 0, nil
}

// startChild starts the test binary as a server on the inbox that env
// names and returns its address and process.
func startChild(t *testing.T, env ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() }) //nolint:errcheck
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	return "http://" + strings.TrimSpace(line), cmd
}

// TestSIGKILLAfterCommit: the server process is killed (SIGKILL) after
// the commit and before a byte of its answer; the client's retry, to a
// server started again, gets the stored answer, and there is one effect.
func TestSIGKILLAfterCommit(t *testing.T) {
	t.Run("pgstore", func(t *testing.T) {
		e := pgEnv(t)
		var schema string
		if err := e.driver.(*pgstore.Driver).Pool().QueryRow(context.Background(), `SELECT current_schema()`).Scan(&schema); err != nil {
			t.Fatal(err)
		}
		killed(t, e, childPG+"="+schema)
	})
	t.Run("sqlitestore", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "inbox.db")
		d, err := sqlitestore.Open(path, sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		e := sqliteEnvOn(t, d)
		killed(t, e, childLite+"="+path)
	})
	t.Run("mysqlstore", func(t *testing.T) {
		e, url := mysqlEnvURL(t)
		killed(t, e, childMy+"="+url)
	})
}

func killed[TTx any](t *testing.T, e *env[TTx], which string) {
	url, cmd := startChild(t, which, childKill+"=1")
	req, _ := http.NewRequest(http.MethodPost, url+"/orders", strings.NewReader("book"))
	req.Header.Set("Idempotency-Key", `"sigkill-1"`)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the killed server answered %d", resp.StatusCode)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want SIGKILL", err)
	}
	if n := e.effects()["book"]; n != 1 {
		t.Fatalf("effects after the kill: %d, want 1 (committed before the answer)", n)
	}
	url, _ = startChild(t, which)
	a := post(t, url+"/orders", "book", `Idempotency-Key: "sigkill-1"`)
	if a.status != http.StatusCreated || a.header.Get("Idempotent-Replayed") != "true" || !strings.Contains(string(a.body), `"for":"book"`) {
		t.Errorf("retry after the kill: %d %v %s", a.status, a.header, a.body)
	}
	if n := e.effects()["book"]; n != 1 {
		t.Errorf("effects after the retry: %d, want 1", n)
	}
}
