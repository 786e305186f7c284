package kafkatest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EnvBrokers names a real Apache Kafka cluster (comma-separated host:port
// seeds, as .ci/start-kafka prints them) that the Kafka tests run against
// beside kfake. Not TXINBOX_KAFKA_BROKERS: txinbox serve reads that as its
// --kafka-brokers, and the serve processes the tests start inherit the
// environment.
const EnvBrokers = "TXINBOX_TEST_KAFKA_BROKERS"

// EnvRequire, set to 1 (CI sets it), makes a missing EnvBrokers fail the
// tests that need a real broker instead of skipping them.
const EnvRequire = "TXINBOX_REQUIRE_KAFKA"

// EnvDir is the directory .ci/start-kafka assembled Kafka in (its jars/
// runs Kafka's own command-line tools); defaults to /tmp/txinbox-kafka.
const EnvDir = "TXINBOX_TEST_KAFKA_DIR"

// Brokers returns the seeds of the real Kafka cluster EnvBrokers names, or
// nil when it is unset; under TXINBOX_REQUIRE_KAFKA=1 or CI=true an unset
// EnvBrokers fails t instead.
func Brokers(t testing.TB) []string {
	t.Helper()
	s := os.Getenv(EnvBrokers)
	if s == "" {
		if Required() {
			t.Fatalf("a real Kafka is required (%s=1 or CI=true) but %s is unset: run .ci/start-kafka", EnvRequire, EnvBrokers)
		}
		return nil
	}
	return strings.Split(s, ",")
}

// Required reports whether the tests must run against a real Kafka.
func Required() bool {
	return os.Getenv(EnvRequire) == "1" || os.Getenv("CI") == "true"
}

// RequireBrokers returns the real cluster's seeds, skipping t when there is
// none and none is required (see Brokers).
func RequireBrokers(t testing.TB) []string {
	t.Helper()
	seeds := Brokers(t)
	if seeds == nil {
		t.Skipf("no real Kafka: %s is unset (run .ci/start-kafka and export its address)", EnvBrokers)
	}
	return seeds
}

// Tool runs one of Kafka's own command-line tools, its main class named in
// full (org.apache.kafka.tools.GetOffsetShell), from the jars
// .ci/start-kafka assembled, and returns its standard output. A tool that
// fails or runs past a minute fails t with its standard error.
func Tool(t testing.TB, class string, args ...string) string {
	t.Helper()
	out, err := RunTool(class, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// RunTool is Tool returning its error instead of failing a test.
func RunTool(class string, args ...string) (string, error) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		dir = "/tmp/txinbox-kafka"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	argv := append([]string{"-cp", filepath.Join(dir, "jars", "*"),
		"-Dlog4j2.configurationFile=" + filepath.Join(dir, "tools-log4j2.properties"), class}, args...)
	cmd := exec.CommandContext(ctx, "java", argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", class, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// Cutter dials a client's connections (franz-go's kgo.Dialer) and cuts
// every one it dialed when asked: a network failure between a client and a
// real broker, where kfake's per-request fault injection is not available.
type Cutter struct {
	mu    sync.Mutex
	conns []net.Conn
}

// Dial dials addr and keeps the connection for Cut.
func (c *Cutter) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err == nil {
		c.mu.Lock()
		c.conns = append(c.conns, conn)
		c.mu.Unlock()
	}
	return conn, err
}

// Cut closes every connection dialed so far; new ones dial as before.
func (c *Cutter) Cut() {
	c.mu.Lock()
	conns := c.conns
	c.conns = nil
	c.mu.Unlock()
	for _, conn := range conns {
		conn.Close() //nolint:errcheck // cutting is the point
	}
}

// SetGroupConfigs sets dynamic configurations of a consumer group (KIP-848:
// consumer.session.timeout.ms, consumer.heartbeat.interval.ms) on the
// cluster of seeds, as kafka-configs --entity-type groups --alter does,
// without a JVM's start-up.
func SetGroupConfigs(ctx context.Context, seeds []string, group string, configs map[string]string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range configs {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value, c.Op = k, kmsg.StringPtr(v), kmsg.IncrementalAlterConfigOpSet
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			return fmt.Errorf("setting the configs of group %s: %w %s", group, err, msg)
		}
	}
	return nil
}
