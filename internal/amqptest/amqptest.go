// Package amqptest gives tests a real RabbitMQ: the URL from
// TXINBOX_TEST_AMQP_URL, else the broker .ci/start-rabbitmq starts. A test
// skips with the reason when no broker answers, except under
// TXINBOX_REQUIRE_RABBITMQ=1 or CI=true (set by .ci/run), where it fails.
//
// Not TXINBOX_AMQP_URL: txinbox serve and demo read that as --amqp-url, and
// the processes the tests start inherit the environment. That name is
// still read when the new one is unset (testkit.Getenv), for branches and
// environments that predate the rename.
package amqptest

import (
	"net/url"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/txinbox/txinbox/internal/testkit"
)

// Env names the test broker's URL.
const Env = "TXINBOX_TEST_AMQP_URL"

// DefaultURL is the broker .ci/start-rabbitmq starts.
const DefaultURL = "amqp://guest:guest@127.0.0.1:5672/"

// URL returns Env (else TXINBOX_AMQP_URL, its older name), else DefaultURL.
func URL() string {
	if u := testkit.Getenv(Env, "TXINBOX_AMQP_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Require returns URL once a broker answers there, or skips t (fails it
// under TXINBOX_REQUIRE_RABBITMQ=1 or CI=true).
func Require(t testing.TB) string {
	t.Helper()
	u := URL()
	conn, err := amqp091.DialConfig(u, amqp091.Config{Dial: amqp091.DefaultDial(3 * time.Second)})
	if err == nil {
		conn.Close()
		return u
	}
	shown := "(an unparsable URL)"
	if p, perr := url.Parse(u); perr == nil {
		shown = p.Redacted()
	}
	testkit.Unavailable(t, "TXINBOX_REQUIRE_RABBITMQ",
		"RabbitMQ not reachable at "+shown+" (set "+Env+" or run .ci/start-rabbitmq): "+err.Error())
	return ""
}
