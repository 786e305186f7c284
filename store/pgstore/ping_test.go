package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgstore"
)

// TestPingSaturatedPool: with every connection of the pool taken, Ping
// asks on a connection of its own. A server that refuses it for want of
// slots answered (a role allowed one connection, which the pool holds);
// a server that does not answer at all is an error.
func TestPingSaturatedPool(t *testing.T) {
	admin := testdb.Require(t)
	ctx := context.Background()
	b := make([]byte, 4)
	rand.Read(b)
	role := "txinbox_ping_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN CONNECTION LIMIT 1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role) //nolint:errcheck // best effort
		admin.Exec(ctx, "DROP ROLE "+role)                                                                 //nolint:errcheck // best effort
	})
	cfg, err := pgxpool.ParseConfig(testdb.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.User = role
	d := driverOfOne(t, cfg)
	pool := d.Pool()
	if err := d.Ping(ctx); err != nil {
		t.Fatalf("ping with a free connection: %v", err)
	}
	held, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	// The precondition: one more connection of the role is refused.
	if _, err := pgx.ConnectConfig(ctx, cfg.ConnConfig); !isSQLState(err, "53300") {
		t.Fatalf("a second connection of the role: %v, want too_many_connections", err)
	}
	if err := d.Ping(ctx); err != nil {
		t.Errorf("ping with the pool saturated and the server out of slots: %v, want an answer", err)
	}
}

// TestPingSaturatedPoolServerGone: with the pool's one connection taken
// and the server no longer reachable, Ping fails: an outage, not an
// answer.
func TestPingSaturatedPoolServerGone(t *testing.T) {
	testdb.Require(t)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testdb.URL())
	if err != nil {
		t.Fatal(err)
	}
	// The pool reaches the server through a proxy, cut once the pool
	// holds its connection.
	px := startProxy(t, net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = "127.0.0.1", px.port()
	cfg.ConnConfig.Fallbacks = nil
	d := driverOfOne(t, cfg)
	held, err := d.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	px.cut()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := d.Ping(pctx); err == nil {
		t.Error("ping with the pool saturated and the server unreachable: nil, want an error")
	}
}

// driverOfOne is a driver on a pool of one connection made with cfg.
func driverOfOne(t *testing.T, cfg *pgxpool.Config) *pgstore.Driver {
	t.Helper()
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	d, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func isSQLState(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}
