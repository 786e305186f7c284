// Package scaleout is txinbox bench's scale-out scenario: real serve
// processes in one Kafka consumer group over one PostgreSQL draining a
// backlog, some SIGKILLed and replaced at rebalances.
package scaleout

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/txinbox/txinbox/effect"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/internal/cli/demo"
)

// Point is serve processes in one Kafka consumer group over one
// PostgreSQL draining a backlog.
type Point struct {
	Processes  int      `json:"processes"`
	Records    int64    `json:"records"`
	Seconds    float64  `json:"seconds"`
	MsgsPerSec float64  `json:"msgs_per_s"`
	VsCeiling  *float64 `json:"vs_ceiling,omitempty"`
	// Kills is how many processes were SIGKILLed (and replaced) during
	// the drain; Doubled and Lost count the ids with more than one
	// effect and with none once the backlog was drained.
	Kills   int   `json:"kills,omitempty"`
	Doubled int64 `json:"doubled"`
	Lost    int64 `json:"lost"`
}

// Config is one scale-out run.
type Config struct {
	// Seeds are the Kafka cluster's brokers (the caller starts it).
	Seeds []string
	// Pool reaches the database the serve processes write to; its table
	// Schema.effects gets their effect rows (EffectSQL, with "effects"
	// qualified by Schema).
	Pool          *pgxpool.Pool
	DB, Schema    string
	EffectSQL     string
	ServeBin      string
	Rounds, Kills int
	Counts        []int64 // serve process counts, taking turns each round
	Records       int64   // the backlog of each drain
	Payload       []byte  // each record's value
	Truncate      func(context.Context) error
	Progress      func(format string, args ...any)
}

// runner is one Run.
type runner struct{ o Config }

// Partitions is the partitions of the scale-out topic: enough
// for 3 processes to share.
const Partitions = 8

// Run drains a backlog with 1, 2 and 3 (--scale-out) real serve
// processes, the process counts taking turns over the rounds; then once
// more with the most processes while some are SIGKILLed and replaced, at
// rebalances. Every drain ends with one effect per record. On an error it
// returns the drains measured before it too.
func Run(ctx context.Context, cfg Config) ([]Point, error) {
	be := &runner{o: cfg}
	seeds := cfg.Seeds
	merged := make([]*Point, len(be.o.Counts))
	measured := func() []Point {
		var out []Point
		for _, p := range merged {
			if p != nil {
				out = append(out, *p)
			}
		}
		return out
	}
	for round := range be.o.Rounds {
		for i, n := range be.o.Counts {
			be.o.Progress("scale-out: %d serve processes, round %d/%d...", n, round+1, be.o.Rounds)
			p, err := be.drain(ctx, seeds, int(n), 0)
			if err != nil {
				return measured(), err
			}
			if m := merged[i]; m != nil {
				m.Records, m.Seconds = m.Records+p.Records, m.Seconds+p.Seconds
				m.MsgsPerSec = float64(m.Records) / m.Seconds
			} else {
				merged[i] = p
			}
		}
	}
	out := measured()
	if be.o.Kills == 0 {
		return out, nil
	}
	n := int(slices.Max(be.o.Counts))
	be.o.Progress("scale-out: %d serve processes, SIGKILLs during rebalances...", n)
	p, err := be.drain(ctx, seeds, n, be.o.Kills)
	if err != nil {
		return out, err
	}
	return append(out, *p), nil
}

// drain starts n serve processes in a new group on a new topic and, once
// the group is stable with all n members (start-up and joins are not
// throughput), produces the backlog; the rate is measured from the first
// record produced to the last effect (producing to the in-process cluster
// is several times faster than draining). With kills > 0, a process is SIGKILLed and replaced
// that many times while the backlog drains, each once the group has
// settled again: the drain's rate then includes the rebalances.
func (be *runner) drain(ctx context.Context, seeds []string, n, kills int) (*Point, error) {
	if err := be.o.Truncate(ctx); err != nil {
		return nil, err
	}
	topic := fmt.Sprintf("scale-%d", time.Now().UnixNano())
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, Partitions, -1, nil, topic); err != nil {
		return nil, fmt.Errorf("creating topic %s: %w", topic, err)
	}
	defer adm.DeleteTopics(context.WithoutCancel(ctx), topic) //nolint:errcheck // frees the cluster's memory; best effort
	group := topic
	var procs []*serveChild
	defer func() {
		for _, p := range procs {
			if p != nil {
				p.kill()
			}
		}
	}()
	for range n {
		p, err := be.startServe(seeds, topic, group)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	if err := be.awaitGroup(ctx, adm, group, n, procs); err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := produceBacklog(ctx, cl, topic, be.o.Records, be.o.Payload); err != nil {
		return nil, err
	}
	want := be.o.Records
	if err := be.killDuringDrain(ctx, seeds, topic, procs, kills); err != nil {
		return nil, err
	}
	if err := be.awaitEffects(ctx, want, procs); err != nil {
		return nil, err
	}
	elapsed := time.Since(t0).Seconds()
	for _, p := range procs {
		p.stop()
	}
	procs = nil
	pt := &Point{Processes: n, Records: want, Seconds: elapsed, MsgsPerSec: float64(want) / elapsed, Kills: kills}
	return pt, be.countOnce(ctx, pt)
}

// killDuringDrain SIGKILLs a random process and starts a replacement,
// kills times, each once a further share of the backlog has drained.
func (be *runner) killDuringDrain(ctx context.Context, seeds []string, topic string, procs []*serveChild, kills int) error {
	rng := rand.New(rand.NewPCG(9, 9))
	for k := range kills {
		if err := be.awaitEffects(ctx, be.o.Records*int64(k+1)/int64(kills+2), procs); err != nil {
			return err
		}
		i := rng.IntN(len(procs))
		procs[i].kill()
		// The group is named after the topic; on an error procs[i] is
		// nil, which the caller's cleanup skips.
		p, err := be.startServe(seeds, topic, topic)
		procs[i] = p
		if err != nil {
			return err
		}
	}
	return nil
}

// produceBacklog fills topic with records keyed by a message-id
// header, all distinct.
func produceBacklog(ctx context.Context, cl *kgo.Client, topic string, records int64, payload []byte) error {
	for start := int64(0); start < records; start += 10_000 {
		recs := make([]*kgo.Record, 0, 10_000)
		for i := start; i < min(start+10_000, records); i++ {
			id := []byte(fmt.Sprint("s-", i))
			recs = append(recs, &kgo.Record{Topic: topic, Key: id, Value: payload,
				Headers: []kgo.RecordHeader{{Key: demo.KafkaHeader, Value: id}}})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("producing the backlog: %w", err)
		}
	}
	return nil
}

// countOnce checks the drain: every record has exactly one effect.
func (be *runner) countOnce(ctx context.Context, pt *Point) error {
	var effects, distinct int64
	if err := be.o.Pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT message_id) FROM effects`).Scan(&effects, &distinct); err != nil {
		return err
	}
	pt.Doubled, pt.Lost = effects-distinct, be.o.Records-distinct
	if pt.Doubled != 0 || pt.Lost != 0 {
		return fmt.Errorf("scale-out with %d processes (%d killed): %d effects doubled, %d lost", pt.Processes, pt.Kills, pt.Doubled, pt.Lost)
	}
	return nil
}

// awaitGroup waits until the group is stable with n members, each with
// partitions assigned.
func (be *runner) awaitGroup(ctx context.Context, adm *kadm.Client, group string, n int, procs []*serveChild) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if err := anyExited(procs); err != nil {
			return err
		}
		gs, err := adm.DescribeGroups(ctx, group)
		if g, ok := gs[group]; err == nil && ok && g.State == "Stable" && len(g.Members) == n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("scale-out: waiting for the group to settle with %d serve processes: %w", n, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("scale-out: the group did not settle with %d serve processes in 2 minutes", n)
}

// scaleOutStall is how long a drain may go without a new effect before it
// fails with the serve processes' logs (a group whose members cannot join:
// kfake's coordinator wedged so for minutes).
const scaleOutStall = time.Minute

// awaitEffects waits until there are at least want effects.
func (be *runner) awaitEffects(ctx context.Context, want int64, procs []*serveChild) error {
	last, lastChange := int64(-1), time.Now()
	for {
		if err := anyExited(procs); err != nil {
			return err
		}
		got, err := be.effectCount(ctx)
		if err != nil || got >= want {
			return err
		}
		if got != last {
			last, lastChange = got, time.Now()
		} else if time.Since(lastChange) > scaleOutStall {
			var logs []string
			for _, p := range procs {
				logs = append(logs, p.stderr.String())
			}
			return fmt.Errorf("scale-out: stuck at %d of %d effects for %s; the serve processes' logs: %s", got, want, scaleOutStall, strings.Join(logs, "\n---\n"))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("scale-out: at %d of %d effects: %w", got, want, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (be *runner) effectCount(ctx context.Context) (int64, error) {
	var n int64
	err := be.o.Pool.QueryRow(ctx, `SELECT count(*) FROM effects`).Scan(&n)
	return n, err
}

// serveChild is one txinbox serve process.
type serveChild struct {
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	stderr *clikit.TailBuffer
}

// startServe starts a serve process consuming topic in group into the
// bench's schema, with the declarative effect (--effect sql).
func (be *runner) startServe(seeds []string, topic, group string) (*serveChild, error) {
	cmd := exec.Command(be.o.ServeBin, "serve", "--db", be.o.DB, "--schema", be.o.Schema,
		"--kafka-brokers", strings.Join(seeds, ","), "--kafka-topics", topic, "--kafka-group", group,
		"--kafka-key", "header:"+demo.KafkaHeader, "--kafka-scope", "bench", "--kafka-session-timeout", "6s",
		"--effect", string(effect.SQL), "--effect-sql", strings.Replace(be.o.EffectSQL, "effects", be.o.Schema+".effects", 1), "--no-purge", "--accept-short-retention")
	// The serve processes are configured by these flags alone: serve reads
	// TXINBOX_* variables as flags (another source, another database).
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TXINBOX_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	c := &serveChild{cmd: cmd, done: make(chan struct{}), stderr: &clikit.TailBuffer{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("scale-out: starting %s serve (--serve-bin): %w", be.o.ServeBin, err)
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// anyExited returns an error naming the first process that exited.
func anyExited(procs []*serveChild) error {
	for _, p := range procs {
		select {
		case <-p.done:
			return fmt.Errorf("scale-out: a serve process exited (%v): %s", p.err, p.stderr.String())
		default:
		}
	}
	return nil
}

// stop stops the process gracefully (SIGTERM), or kills it after 30s.
func (c *serveChild) stop() {
	c.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may be gone already
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.kill()
	}
}

// kill SIGKILLs the process and waits for it to be gone.
func (c *serveChild) kill() {
	c.cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck // it may be gone already
	<-c.done
}

// ServeBinary is the txinbox binary that runs the scale-out's serve
// processes by default: this one.
func ServeBinary() string {
	p, err := os.Executable()
	if err != nil {
		return "txinbox"
	}
	return p
}
