// Package brokers gives the demos, the benchmarks and the scale-out tests
// throwaway message brokers without linking them: it runs the program
// txinbox-brokers (cmd/txinbox-brokers: kfake, nats-server, the SQS fake)
// as a child process, reads the addresses it prints, and stops it when
// asked. The brokers are real network servers on loopback, so several
// processes (consumer children, serve processes of one consumer group) can
// share them.
//
// The program is found, in this order: $TXINBOX_BROKERS_BIN; next to the
// running executable; on $PATH; or built with `go build` when the working
// directory lies in this module's source tree and go is on $PATH (the
// first build compiles the brokers: about a minute on two cores).
package brokers

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Options says which brokers to start.
type Options struct {
	// Kafka is the number of brokers of an in-process Kafka cluster
	// (franz-go's kfake, minimum group session timeout 100ms). Defaults
	// to 0: no Kafka.
	Kafka int
	// NATS starts nats-server with JetStream.
	NATS bool
	// SQS starts the in-repo SQS fake (use SQSCredentials with it).
	SQS bool
	// Progress, when not nil, receives a line before a slow step (building
	// the program). Defaults to nothing.
	Progress io.Writer
}

// Running is a txinbox-brokers process and the addresses of its brokers;
// it is also the JSON line the program prints.
type Running struct {
	// KafkaSeeds are the Kafka brokers' host:port addresses.
	KafkaSeeds []string `json:"kafka_seeds,omitempty"`
	// NATSURL is the NATS client URL (nats://127.0.0.1:PORT).
	NATSURL string `json:"nats_url,omitempty"`
	// NATSVersion is the embedded nats-server's version.
	NATSVersion string `json:"nats_version,omitempty"`
	// SQSEndpoint is the SQS fake's endpoint (http://127.0.0.1:PORT).
	SQSEndpoint string `json:"sqs_endpoint,omitempty"`

	cmd     *exec.Cmd
	stdin   io.Closer
	cleanup func()
}

// SQSCredentials are static credentials for a client of the SQS fake,
// which does not authenticate.
var SQSCredentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: "sqsfake", SecretAccessKey: "sqsfake", Source: "txinbox-brokers"}, nil
})

// startTimeout bounds the wait for the address line once the program runs.
const startTimeout = time.Minute

// Start runs txinbox-brokers with the brokers o asks for and returns once
// they accept connections. Stop ends it; so does the end of this process
// (the child exits when its standard input closes).
func Start(ctx context.Context, o Options) (*Running, error) {
	if o.Kafka < 0 || o.Kafka > 16 {
		return nil, fmt.Errorf("brokers: Options.Kafka must be 0 to 16, got %d", o.Kafka)
	}
	path, cleanup, err := program(ctx, o.Progress)
	if err != nil {
		return nil, err
	}
	args := []string{"--kafka", strconv.Itoa(o.Kafka)}
	if o.NATS {
		args = append(args, "--nats")
	}
	if o.SQS {
		args = append(args, "--sqs")
	}
	r, err := launch(ctx, path, args)
	if err != nil {
		cleanup()
		return nil, err
	}
	r.cleanup = cleanup
	if err := r.check(o); err != nil {
		r.Stop() //nolint:errcheck // the mismatch matters
		return nil, fmt.Errorf("brokers: %s: %w (an older txinbox-brokers? set TXINBOX_BROKERS_BIN or rebuild it)", path, err)
	}
	return r, nil
}

// check refuses an address line that lacks what o asked for.
func (r *Running) check(o Options) error {
	switch {
	case len(r.KafkaSeeds) != o.Kafka:
		return fmt.Errorf("%d Kafka seeds for %d brokers asked", len(r.KafkaSeeds), o.Kafka)
	case o.NATS && r.NATSURL == "":
		return errors.New("no NATS URL")
	case o.SQS && r.SQSEndpoint == "":
		return errors.New("no SQS endpoint")
	}
	return nil
}

// launch starts the program and reads its address line.
func launch(ctx context.Context, path string, args []string) (*Running, error) {
	cmd := exec.Command(path, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("brokers: starting %s: %w", path, err)
	}
	r := &Running{cmd: cmd, stdin: stdin, cleanup: func() {}}
	if err := r.readAddresses(ctx, stdout); err != nil {
		r.Stop() //nolint:errcheck // the start error matters
		return nil, fmt.Errorf("brokers: %s %s: no address line: %v %s", path, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return r, nil
}

// readAddresses reads the program's JSON line into r, waiting at most
// startTimeout.
func (r *Running) readAddresses(ctx context.Context, stdout io.Reader) error {
	line := make(chan error, 1)
	go func() {
		b, err := bufio.NewReader(stdout).ReadBytes('\n')
		if err == nil {
			err = json.Unmarshal(b, r)
		}
		line <- err
	}()
	tctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	select {
	case err := <-line:
		return err
	case <-tctx.Done():
		return tctx.Err()
	}
}

// Stop ends the brokers: it closes the program's standard input, waits up
// to ten seconds for it to exit, then kills it.
func (r *Running) Stop() error {
	defer r.cleanup()
	r.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		r.cmd.Process.Kill() //nolint:errcheck // it may have just exited
		<-done
		return errors.New("brokers: txinbox-brokers did not exit in 10s: killed")
	}
}

// StartKafka starts a Kafka cluster of n brokers and returns its seeds and
// a function that stops it.
func StartKafka(ctx context.Context, n int) (seeds []string, stop func(), err error) {
	r, err := Start(ctx, Options{Kafka: max(n, 1)})
	if err != nil {
		return nil, nil, err
	}
	return r.KafkaSeeds, func() { r.Stop() }, nil //nolint:errcheck // best effort
}

// StartSQS starts the SQS fake and returns its endpoint and a function
// that stops it.
func StartSQS(ctx context.Context) (endpoint string, stop func(), err error) {
	r, err := Start(ctx, Options{SQS: true})
	if err != nil {
		return "", nil, err
	}
	return r.SQSEndpoint, func() { r.Stop() }, nil //nolint:errcheck // best effort
}
