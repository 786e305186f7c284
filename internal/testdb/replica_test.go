//go:build unix

package testdb

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestReplicaPairFailover: a row committed on a synchronous primary is on
// the standby once the primary is killed and the standby promoted, and the
// pair's multi-host URL, which reached the primary before, reaches the
// promoted standby after, for writes; before the promotion it reaches
// nothing (the standby is read-only).
func TestReplicaPairFailover(t *testing.T) {
	t.Parallel()
	p := StartReplicaPair(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port := func() (int, error) {
		conn, err := pgx.Connect(ctx, p.URL())
		if err != nil {
			return 0, err
		}
		defer conn.Close(ctx) //nolint:errcheck // read only
		var n int
		err = conn.QueryRow(ctx, `SELECT inet_server_port()`).Scan(&n)
		return n, err
	}
	if got, err := port(); err != nil || got != p.Primary.Port() {
		t.Fatalf("before the failover the URL reaches port %d (%v), want the primary's %d", got, err, p.Primary.Port())
	}
	if err := p.Primary.exec(ctx, `CREATE TABLE acked (id int)`, `INSERT INTO acked VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if err := p.Primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if got, err := port(); err == nil {
		t.Fatalf("with the primary dead and the standby not promoted, the URL reached port %d", got)
	}
	if err := p.Standby.Promote(); err != nil {
		t.Fatal(err)
	}
	if got, err := port(); err != nil || got != p.Standby.Port() {
		t.Fatalf("after the promotion the URL reaches port %d (%v), want the standby's %d", got, err, p.Standby.Port())
	}
	if err := p.Standby.exec(ctx, `INSERT INTO acked VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, p.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx) //nolint:errcheck // read only
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM acked`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("the promoted standby holds %d rows (%v), want 2", n, err)
	}
}
