package demo_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// requireRabbitMQ skips the test when no broker answers at
// TXINBOX_AMQP_URL (default amqp://guest:guest@127.0.0.1:5672/), or fails
// it under TXINBOX_REQUIRE_RABBITMQ=1 (set by CI).
func requireRabbitMQ(t *testing.T) {
	t.Helper()
	u := os.Getenv("TXINBOX_AMQP_URL")
	if u == "" {
		u = "amqp://guest:guest@127.0.0.1:5672/"
	}
	conn, err := amqp091.DialConfig(u, amqp091.Config{Dial: amqp091.DefaultDial(3 * time.Second)})
	if err == nil {
		conn.Close()
		return
	}
	msg := "RabbitMQ not reachable (set TXINBOX_AMQP_URL or run .ci/start-rabbitmq): " + err.Error()
	if os.Getenv("TXINBOX_REQUIRE_RABBITMQ") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func TestDemoRabbitMQSQLite(t *testing.T) {
	t.Parallel()
	requireRabbitMQ(t)
	r := runDemoJSON(t, 0, "--source", "rabbitmq", "--db", filepath.Join(t.TempDir(), "demo.db"),
		"--messages", "600", "--duplicates", "0.3", "--crashes", "6")
	checkQueueExactlyOnce(t, r, 600, 6)
}

func TestDemoRabbitMQPostgres(t *testing.T) {
	t.Parallel()
	requireRabbitMQ(t)
	r := runDemoJSON(t, 0, "--source", "rabbitmq", "--db", demoPostgresURL(t, "txinbox-amqp-demo-test"),
		"--messages", "1000", "--duplicates", "0.3", "--crashes", "3")
	checkQueueExactlyOnce(t, r, 1000, 3)
}

func TestDemoRabbitMQCatchesSabotage(t *testing.T) {
	t.Parallel()
	requireRabbitMQ(t)
	r := runDemoJSON(t, 1, "--source", "rabbitmq", "--db", filepath.Join(t.TempDir(), "s.db"), "--sabotage", "delivery-key",
		"--messages", "200", "--crashes", "3")
	if r.OK || r.DoubleEffects == 0 {
		t.Errorf("sabotage delivery-key not caught: %+v", r)
	}
}
