package demo_test

import (
	"path/filepath"
	"testing"

	"github.com/txinbox/txinbox/internal/amqptest"
)

func TestDemoRabbitMQSQLite(t *testing.T) {
	t.Parallel()
	u := amqptest.Require(t)
	r := runDemoJSON(t, 0, "--source", "rabbitmq", "--amqp-url", u, "--db", filepath.Join(t.TempDir(), "demo.db"),
		"--messages", "600", "--duplicates", "0.3", "--crashes", "6")
	checkQueueExactlyOnce(t, r, 600, 6)
}

func TestDemoRabbitMQPostgres(t *testing.T) {
	t.Parallel()
	u := amqptest.Require(t)
	r := runDemoJSON(t, 0, "--source", "rabbitmq", "--amqp-url", u, "--db", demoPostgresURL(t, "txinbox-amqp-demo-test"),
		"--messages", "1000", "--duplicates", "0.3", "--crashes", "3")
	checkQueueExactlyOnce(t, r, 1000, 3)
}

func TestDemoRabbitMQCatchesSabotage(t *testing.T) {
	t.Parallel()
	u := amqptest.Require(t)
	r := runDemoJSON(t, 1, "--source", "rabbitmq", "--amqp-url", u, "--db", filepath.Join(t.TempDir(), "s.db"), "--sabotage", "delivery-key",
		"--messages", "200", "--crashes", "3")
	if r.OK || r.DoubleEffects == 0 {
		t.Errorf("sabotage delivery-key not caught: %+v", r)
	}
}
