package serve_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/cli/clitest"
)

// TestRelayBinarySIGTERMDuringStartup: a SIGTERM while the relay connects
// to a database that accepts the connection and never answers stops it
// with exit 0 and a plain "stopped during start-up", as serve does, not
// with exit 1 and "context canceled".
func TestRelayBinarySIGTERMDuringStartup(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c // held open, never answered
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, clitest.Bin(), "relay", "run", "--db", "postgres://u@"+ln.Addr().String()+"/db?sslmode=disable",
		"--target", "http", "--http-url", "http://127.0.0.1:9/x")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TXINBOX_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-accepted:
		defer c.Close()
	case <-ctx.Done():
		t.Fatalf("the relay never connected:\n%s", stderr.String())
	}
	wantStoppedDuringStartup(t, cmd, &stderr, "txinbox relay run", "while connecting")
}
