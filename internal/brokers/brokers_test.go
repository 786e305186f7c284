package brokers_test

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox/internal/brokers"
)

// TestProductionBinaryLinksNoTestServers guards the split: the embedded
// brokers live in txinbox-brokers, never in txinbox.
func TestProductionBinaryLinksNoTestServers(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on $PATH: " + err.Error())
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/txinbox/txinbox/cmd/txinbox").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps printed %d packages: %s", len(deps), out)
	}
	for _, p := range deps {
		for _, banned := range []string{"github.com/twmb/franz-go/pkg/kfake", "github.com/nats-io/nats-server/", "github.com/txinbox/txinbox/source/sqs/sqsfake"} {
			if strings.HasPrefix(p, banned) {
				t.Errorf("cmd/txinbox links %s: test servers belong in cmd/txinbox-brokers", p)
			}
		}
	}
}

// TestStart runs the program (built from this source tree) with every
// broker and checks that each one accepts connections, then that Stop ends
// them.
func TestStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := brokers.Start(ctx, brokers.Options{Kafka: 2, NATS: true, SQS: true})
	if err != nil {
		t.Fatal(err)
	}
	addrs := append([]string{}, r.KafkaSeeds...)
	addrs = append(addrs, strings.TrimPrefix(r.NATSURL, "nats://"), strings.TrimPrefix(r.SQSEndpoint, "http://"))
	if len(r.KafkaSeeds) != 2 || r.NATSVersion == "" {
		t.Fatalf("Running = %+v: want 2 Kafka seeds and a NATS version", r)
	}
	for _, a := range addrs {
		c, err := net.DialTimeout("tcp", a, 5*time.Second)
		if err != nil {
			t.Fatalf("dialing %s: %v", a, err)
		}
		c.Close()
	}
	if err := r.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Stop", a)
		}
	}
}

func TestStartRejectsBadKafkaCount(t *testing.T) {
	if _, err := brokers.Start(context.Background(), brokers.Options{Kafka: 17}); err == nil || !strings.Contains(err.Error(), "Options.Kafka") {
		t.Fatalf("Start(Kafka: 17) = %v, want an error naming Options.Kafka", err)
	}
}
