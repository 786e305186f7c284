package outbox_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/outbox/outboxlite"
	"github.com/txinbox/txinbox/outbox/outboxmy"
	"github.com/txinbox/txinbox/outbox/outboxpg"
	"github.com/txinbox/txinbox/store/mysqlstore"
	"github.com/txinbox/txinbox/store/pgstore"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// envChild names the database a child relay process opens:
// "postgres:SCHEMA" or "sqlite:PATH".
const envChild = "TXINBOX_OUTBOX_CHILD"

// runChild is the child's whole life when the test binary was started by
// TestTwoProcesses: relay until nothing is unsent, print the confirmed
// stable ids as JSON, exit.
func runChild() {
	desc := os.Getenv(envChild)
	if desc == "" {
		return
	}
	if err := relayChild(desc); err != nil {
		fmt.Fprintln(os.Stderr, "outbox child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func relayChild(desc string) error {
	ctx := context.Background()
	kind, where, _ := strings.Cut(desc, ":")
	var s outbox.Store
	if kind == "pgdbstore" {
		st, sdb, err := dialPGDB(where, "")
		if err != nil {
			return err
		}
		defer sdb.Close()
		s = st
	} else if kind == "postgres" {
		cfg, err := pgxpool.ParseConfig(testdb.URL())
		if err != nil {
			return err
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = where
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return err
		}
		defer pool.Close()
		d, err := pgstore.New(pool, pgstore.Options{})
		if err != nil {
			return err
		}
		s = outboxpg.New(d)
	} else if kind == "mysql" {
		db, err := mysqlstore.Open(where)
		if err != nil {
			return err
		}
		defer db.Close()
		d, err := mysqlstore.New(db, mysqlstore.Options{})
		if err != nil {
			return err
		}
		s = outboxmy.New(d)
	} else {
		d, err := sqlitestore.Open(where, sqlitestore.Options{})
		if err != nil {
			return err
		}
		defer d.Close()
		s = outboxlite.New(d)
	}
	rec := newRecorder(true)
	r, err := outbox.New(s, outbox.Config{Target: rec, Ordered: true, BatchSize: 50})
	if err != nil {
		return err
	}
	// Both children start together: each waits for a line on stdin.
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := r.RunOnce(ctx); err != nil {
			return err
		}
		st, err := s.Stats(ctx)
		if err != nil {
			return err
		}
		if st.Unsent == 0 {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("rows left unsent after a minute")
		}
	}
	if len(rec.overlaps) > 0 {
		return fmt.Errorf("sends overlapped: %v", rec.overlaps)
	}
	return json.NewEncoder(os.Stdout).Encode(rec.order)
}

// TestTwoProcesses runs two relay processes, ordered, on one table: every
// row is confirmed exactly once over both, and each key's rows in order
// (each process's confirmations of a key are a subsequence of the key's
// rows, so together they hold every row once).
func TestTwoProcesses(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		n := d.many
		d.add(t, entries(n, 10)...)
		type child struct {
			cmd   *exec.Cmd
			out   strings.Builder
			errs  strings.Builder
			stdin *os.File
		}
		var children []*child
		for range 2 {
			c := &child{cmd: exec.Command(os.Args[0], "-test.run=^$")}
			c.cmd.Env = append(os.Environ(), envChild+"="+d.kind+":"+d.desc)
			c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.errs
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			c.cmd.Stdin, c.stdin = r, w
			if err := c.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			children = append(children, c)
		}
		for _, c := range children {
			fmt.Fprintln(c.stdin, "go")
			c.stdin.Close()
		}
		seen := map[int64]int{}
		for i, c := range children {
			if err := c.cmd.Wait(); err != nil {
				t.Fatalf("child %d: %v\n%s", i, err, c.errs.String())
			}
			var order map[string][]int64
			if err := json.Unmarshal([]byte(c.out.String()), &order); err != nil {
				t.Fatalf("child %d output %q: %v", i, c.out.String(), err)
			}
			total := 0
			for k, ids := range order {
				for j, id := range ids {
					seen[id]++
					if j > 0 && id <= ids[j-1] {
						t.Errorf("child %d, key %s: row %d after row %d", i, k, id, ids[j-1])
					}
				}
				total += len(ids)
			}
			t.Logf("child %d confirmed %d rows", i, total)
		}
		for id, c := range seen {
			if c != 1 {
				t.Errorf("row %d confirmed %d times over both processes", id, c)
			}
		}
		if st := stats(t, d.store); len(seen) != n || st.Sent != int64(n) || st.Unsent != 0 {
			t.Errorf("%d rows confirmed, stats %+v; want all %d sent", len(seen), st, n)
		}
	})
}
