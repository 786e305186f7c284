package serve_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/source/sqs/sqsfake"
)

// startKafka runs a kfake cluster in the test process with the topics
// given, each with its retention.ms ("" for the default), and returns
// its seeds and a client.
func startKafka(t *testing.T, topics map[string]string) (string, *kgo.Client) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	seeds := strings.Join(cluster.ListenAddrs(), ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	for topic, retention := range topics {
		var cfg map[string]*string
		if retention != "" {
			cfg = map[string]*string{"retention.ms": &retention}
		}
		if _, err := adm.CreateTopic(context.Background(), 2, 1, cfg, topic); err != nil {
			t.Fatalf("creating %s: %v", topic, err)
		}
	}
	return seeds, cl
}

// TestServeBinaryRefusesShortRetention: the binary reads retention.ms of a
// header-keyed Kafka topic and SQS's MessageRetentionPeriod from the
// brokers and refuses a shorter --retention, naming both figures; a topic
// kept for ever is refused whatever the retention; offset keys are not
// checked; --accept-short-retention starts, logs the decision, and the
// source works: one effect per id, duplicates counted, lag exported.
func TestServeBinaryRefusesShortRetention(t *testing.T) {
	t.Parallel()
	pool := testdb.Require(t)
	schema := testdb.NewSchema(t, pool)
	effectsTable(t, pool, schema)
	seeds, cl := startKafka(t, map[string]string{"invoices": "5184000000", "ledger": "-1"})
	kafka := func(topic, key string, more ...string) []string {
		return append([]string{"serve", "--db", testdb.URL(), "--schema", schema, "--no-purge", "--kafka-brokers", seeds,
			"--kafka-topics", topic, "--kafka-group", "billing", "--kafka-key", key}, more...)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{kafka("invoices", "header:message-id", "--retention", "30d"),
			[]string{`--retention 30d is shorter than retention.ms=5184000000 (60d) of Kafka topic "invoices"`, "--accept-short-retention"}},
		{kafka("ledger", "header:message-id", "--retention", "365d"),
			[]string{`Kafka topic "ledger" keeps messages for ever (retention.ms=-1)`, "--accept-short-retention"}},
		// The source's own retention is what is checked: long enough
		// overall, too short for this source.
		{kafka("invoices", "header:message-id", "--retention", "90d", "--kafka-retention", "45d"),
			[]string{`--kafka-retention 45d is shorter than retention.ms=5184000000 (60d) of Kafka topic "invoices"`}},
		{kafka("invoices", "header:message-id", "--kafka-retention", "soon"), []string{`--kafka-retention: "soon" is not a positive duration`}},
	} {
		_, errs, code := runBinEnv(t, nil, tc.args...)
		for _, w := range tc.want {
			if code != 2 || !strings.Contains(errs, w) {
				t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, w)
			}
		}
	}

	// Offset keys: the watermark covers any retention; not checked.
	p := startServeBin(t, nil, kafka("ledger", "offset", "--retention", "1d", "--log-format", "json")[1:]...)
	if code, _ := p.signal(syscall.SIGTERM); code != 0 || !strings.Contains(p.stderr.String(), "Kafka retention not checked") {
		t.Errorf("offset key: exit %d:\n%s", code, p.stderr)
	}

	const invoices, resent = 20, 5
	for i := range invoices + resent {
		id := fmt.Sprint("inv-", i%invoices)
		r := &kgo.Record{Topic: "invoices", Key: []byte(id), Value: []byte(id), Headers: []kgo.RecordHeader{{Key: "message-id", Value: []byte(id)}}}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p = startServeBin(t, nil, kafka("invoices", "header:message-id", "--retention", "30d", "--accept-short-retention",
		"--log-format", "json", "--http-listen", "127.0.0.1:0", "--kafka-scope", "invoicing", "--effect", "sql",
		"--effect-sql", "INSERT INTO "+schema+".effects (scope, id, source, payload, detail) "+
			"VALUES ($1, $2, $4, $9, concat_ws(' ', $3::text, $5::text, $6::text, $7::text, $8::text))")[1:]...)
	waitFor(t, "the Kafka records", func() bool {
		return p.metric(`txinbox_duplicates_total{scope="invoicing",source="invoices"}`) == resent &&
			p.metric(`txinbox_messages_total{outcome="processed",scope="invoicing",source="invoices"}`) == invoices
	})
	if code, body := p.get("/readyz"); code != 200 || !strings.Contains(body, `"kafka":"ok"`) {
		t.Errorf("/readyz = %d %q", code, body)
	}
	waitFor(t, "the committed offsets in the lag", func() bool {
		return p.metric(`txinbox_source_lag{partition="invoices/0",scope="invoicing",source="kafka"}`) == 0 &&
			p.metric(`txinbox_source_lag{partition="invoices/1",scope="invoicing",source="kafka"}`) == 0
	})
	if code, _ := p.signal(syscall.SIGTERM); code != 0 {
		t.Errorf("SIGTERM: exit %d:\n%s", code, p.stderr)
	}
	if !strings.Contains(p.stderr.String(), "accepted by --accept-short-retention") || !strings.Contains(p.stderr.String(), "retention.ms=5184000000") {
		t.Errorf("the accepted retention was not logged:\n%s", p.stderr)
	}
	if rows, distinct := effectCounts(t, pool, schema, "invoicing"); rows != invoices || distinct != invoices {
		t.Errorf("Kafka effects: %d rows, %d ids; want %d of each", rows, distinct, invoices)
	}
}

// TestServeBinaryRefusesShortSQSRetention: the queue's
// MessageRetentionPeriod (4 days by default) is read from SQS (the in-repo
// fake) and a shorter --retention is refused.
func TestServeBinaryRefusesShortSQSRetention(t *testing.T) {
	t.Parallel()
	pool := testdb.Require(t)
	schema := testdb.NewSchema(t, pool)
	fake, queueURL := sqsFakeQueue(t, "invoices")
	args := []string{"--db", testdb.URL(), "--schema", schema, "--no-purge", "--sqs-queue-url", queueURL,
		"--sqs-endpoint", fake.URL(), "--sqs-region", "us-east-1"}
	awsEnv := []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test"}
	cmdErr := func(more ...string) (string, int) {
		_, errs, code := runBinEnv(t, awsEnv, append(append([]string{"serve"}, args...), more...)...)
		return errs, code
	}
	if errs, code := cmdErr("--retention", "1d"); code != 2 ||
		!strings.Contains(errs, "--retention 1d is shorter than MessageRetentionPeriod=345600 (4d) of SQS queue "+queueURL) {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	p := startServeBin(t, awsEnv, append(args, "--retention", "5d", "--http-listen", "127.0.0.1:0")...)
	if code, body := p.get("/readyz"); code != 200 || !strings.Contains(body, `"sqs":"ok"`) {
		t.Errorf("/readyz = %d %q", code, body)
	}
	if code, _ := p.signal(syscall.SIGTERM); code != 0 {
		t.Errorf("SIGTERM: exit %d:\n%s", code, p.stderr)
	}
}

// TestServeBinarySQSCredentialsFromProfile: with no keys in the environment
// the SQS source takes its credentials and region from the shared AWS files
// and AWS_PROFILE, as the AWS CLI does (the fake records who signed).
func TestServeBinarySQSCredentialsFromProfile(t *testing.T) {
	t.Parallel()
	pool := testdb.Require(t)
	schema := testdb.NewSchema(t, pool)
	fake, queueURL := sqsFakeQueue(t, "orders")
	dir := t.TempDir()
	creds, conf := filepath.Join(dir, "credentials"), filepath.Join(dir, "config")
	for name, text := range map[string]string{
		creds: "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s\n\n[billing]\naws_access_key_id = AKIDBILLING\naws_secret_access_key = s\n",
		conf:  "[profile billing]\nregion = eu-central-1\n",
	} {
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"AWS_SHARED_CREDENTIALS_FILE=" + creds, "AWS_CONFIG_FILE=" + conf, "AWS_PROFILE=billing",
		"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_REGION=", "AWS_DEFAULT_REGION=", "AWS_EC2_METADATA_DISABLED=true"}
	p := startServeBin(t, env, "--db", testdb.URL(), "--schema", schema, "--no-purge", "--sqs-queue-url", queueURL,
		"--sqs-endpoint", fake.URL(), "--retention", "5d", "--http-listen", "127.0.0.1:0")
	if code, body := p.get("/readyz"); code != 200 || !strings.Contains(body, `"sqs":"ok"`) {
		t.Errorf("/readyz = %d %q", code, body)
	}
	if code, _ := p.signal(syscall.SIGTERM); code != 0 {
		t.Errorf("SIGTERM: exit %d:\n%s", code, p.stderr)
	}
	signers := strings.Join(fake.Signers(), " ")
	if !strings.Contains(signers, "AKIDBILLING/eu-central-1") || strings.Contains(signers, "AKIDDEFAULT") {
		t.Errorf("requests signed by %q, want the billing profile's key and region", signers)
	}
	// Half a key pair in the environment is a configuration error.
	_, errs, code := runBinEnv(t, append(env, "AWS_ACCESS_KEY_ID=AKIDHALF"), "serve", "--db", testdb.URL(), "--schema", schema,
		"--no-purge", "--sqs-queue-url", queueURL, "--sqs-endpoint", fake.URL())
	if code != 2 || !strings.Contains(errs, "AWS_SECRET_ACCESS_KEY") {
		t.Errorf("half a key pair: exit %d, %q", code, errs)
	}
}

// sqsFakeQueue starts the SQS fake with one queue and returns its URL.
func sqsFakeQueue(t *testing.T, name string) (*sqsfake.Server, string) {
	t.Helper()
	fake := sqsfake.NewServer()
	t.Cleanup(fake.Close)
	cl := awssqs.New(awssqs.Options{BaseEndpoint: aws.String(fake.URL()), Region: "us-east-1", Credentials: sqsfake.Credentials})
	out, err := cl.CreateQueue(context.Background(), &awssqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return fake, *out.QueueUrl
}
