// Command txinbox-brokers runs throwaway message brokers on loopback for the
// demos, the benchmarks and the tests: an in-process Kafka cluster (franz-go's
// kfake), NATS with JetStream (nats-server embedded, data in a temporary
// directory) and the in-repo SQS fake. They live in this program, not in
// txinbox, so that the production binary links no test servers.
//
//	txinbox-brokers --kafka 3 --nats --sqs
//
// prints one JSON line with the addresses once every broker accepts
// connections (see internal/brokers.Running for its fields), then serves
// until its standard input closes (so it never outlives the process that
// started it) or it gets SIGINT or SIGTERM. Nothing is kept.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/txinbox/txinbox/internal/brokers"
	"github.com/txinbox/txinbox/source/sqs/sqsfake"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("txinbox-brokers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kafkaN := fs.Int("kafka", 0, "start an in-process Kafka cluster (kfake) of this many brokers (0: none)")
	withNATS := fs.Bool("nats", false, "start NATS with JetStream")
	withSQS := fs.Bool("sqs", false, "start the SQS fake")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || *kafkaN < 0 || *kafkaN > 16 {
		fmt.Fprintln(stderr, "txinbox-brokers: usage: txinbox-brokers [--kafka N (0-16)] [--nats] [--sqs]")
		return 2
	}
	r, stop, err := startAll(*kafkaN, *withNATS, *withSQS)
	if err != nil {
		fmt.Fprintln(stderr, "txinbox-brokers:", err)
		return 1
	}
	defer stop()
	if err := json.NewEncoder(stdout).Encode(r); err != nil {
		return 1
	}
	waitForEnd(stdin)
	return 0
}

// startAll starts the brokers asked for; stop stops them, in reverse order.
func startAll(kafkaN int, withNATS, withSQS bool) (r brokers.Running, stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if kafkaN > 0 {
		var s func()
		if r.KafkaSeeds, s, err = startKafka(kafkaN); err != nil {
			return r, nil, err
		}
		stops = append(stops, s)
	}
	if withNATS {
		var s func()
		if r.NATSURL, s, err = startNATS(); err != nil {
			stop()
			return r, nil, err
		}
		r.NATSVersion, stops = server.VERSION, append(stops, s)
	}
	if withSQS {
		fake := sqsfake.NewServer()
		r.SQSEndpoint, stops = fake.URL(), append(stops, fake.Close)
	}
	return r, stop, nil
}

// waitForEnd returns when stdin reaches its end (the parent closed it or
// died) or a SIGINT or SIGTERM arrives.
func waitForEnd(stdin io.Reader) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	eof := make(chan struct{})
	go func() {
		io.Copy(io.Discard, stdin) //nolint:errcheck // any end will do
		close(eof)
	}()
	select {
	case <-ctx.Done():
	case <-eof:
	}
}

// startKafka starts n kfake brokers. The short minimum session timeout
// lets the demos' consumers, SIGKILLed on purpose, leave their group
// quickly.
func startKafka(n int) ([]string, func(), error) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(n), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		return nil, nil, fmt.Errorf("starting the kfake cluster: %w", err)
	}
	return cluster.ListenAddrs(), cluster.Close, nil
}

// startNATS starts nats-server with JetStream, its store in a temporary
// directory removed at the end.
func startNATS() (string, func(), error) {
	dir, err := os.MkdirTemp("", "txinbox-brokers-nats-")
	if err != nil {
		return "", nil, err
	}
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true})
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("starting nats-server: %w", err)
	}
	stop := func() {
		srv.Shutdown()
		srv.WaitForShutdown()
		os.RemoveAll(dir)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		stop()
		return "", nil, errors.New("nats-server not ready in 10s")
	}
	return srv.ClientURL(), stop, nil
}
