package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/internal/runner"
)

// Consumer consumes topics as a member of a consumer group and processes
// every record through a txinbox.Processor: exactly-once effects in the
// database, offsets committed to Kafka only after their batch committed.
// Several processes with the same Group share the partitions; the inbox
// database is shared too.
type Consumer struct {
	cfg  Config
	proc source.Processor
	// offsets is proc as a source.OffsetProcessor with OffsetWatermark,
	// nil with the other keys.
	offsets source.OffsetProcessor
	// batch is the processor's MaxBatchSize: a partition's records go
	// into transactions of at most this many.
	batch int
	// offsetKeyed: the key is OffsetKey, so a record at or below the
	// partition's watermark is known to be a duplicate without a lookup.
	offsetKeyed bool

	running runner.Once
	// stopped is set when Run's client has closed.
	stopped atomic.Bool
	// client is the client of Run, for the group callbacks.
	client atomic.Pointer[kgo.Client]
	// clientSet is closed once client is set: the client joins the group
	// as soon as kgo.NewClient made it, so its hooks can run before.
	clientSet chan struct{}
	// abandon is set when a rebalance waits for this member: partitions
	// stop between transactions and rewind to what they did not finish.
	abandon atomic.Bool

	mu    sync.Mutex
	parts map[topicPartition]*partitionState
	// pending are offsets whose batches committed and whose offset
	// commit has not succeeded yet.
	pending map[topicPartition]kgo.EpochOffset
	// pendingAcked counts the records that each pending offset covers
	// (since its partition's last successful commit), for AckHooks.
	pendingAcked map[topicPartition]int
	// cancelCommit cancels the offset commit after a poll, if one is in
	// flight, when a rebalance waits for this member.
	cancelCommit context.CancelFunc
	// wakePoll ends the poll in flight, if any, when a commit becomes
	// pending during it.
	wakePoll context.CancelFunc
	// processing is true from a poll's return to its AllowRebalance.
	processing bool

	stats stats
}

type topicPartition struct {
	topic     string
	partition int32
}

// partitionState is what the consumer keeps per owned partition.
type partitionState struct {
	// watermark is the last offset known committed in the database; -1:
	// none. With OffsetWatermark it is the checkpoint ProcessOffsets
	// returned (or read again after ErrCheckpointMoved), the Saved of the
	// partition's next call.
	watermark int64
	failures  int         // consecutive batch transactions that failed
	failingAt time.Time   // when the first of them failed
	resume    *time.Timer // ends a pause after a Retry or a failure
}

// New returns a Consumer that hands its records to proc, a processor built
// with txinbox.NewProcessor with Ordered set (its Scope names the inbox
// scope, e.g. the group). It does not connect: Run does.
func New(proc source.Processor, cfg Config) (*Consumer, error) {
	cfg, err := runner.Configure("kafka", proc, cfg, Config.withDefaults, Config.validate)
	if err != nil {
		return nil, err
	}
	var offsets source.OffsetProcessor
	if isWatermarkKey(cfg.Key) {
		var ok bool
		if offsets, ok = proc.(source.OffsetProcessor); !ok {
			return nil, fmt.Errorf("kafka: %w", &txinbox.ConfigError{Field: "Key",
				Msg: "OffsetWatermark needs a processor with ProcessOffsets (a source.OffsetProcessor, as a *txinbox.Processor is)"})
		}
	}
	return &Consumer{cfg: cfg, proc: proc, offsets: offsets, batch: proc.Settings().MaxBatchSize, offsetKeyed: isOffsetKey(cfg.Key),
		parts: map[topicPartition]*partitionState{}, pending: map[topicPartition]kgo.EpochOffset{},
		pendingAcked: map[topicPartition]int{}, clientSet: make(chan struct{})}, nil
}

// isOffsetKey reports whether key is OffsetKey (nil defaults to it).
func isOffsetKey(key Key) bool {
	_, ok := key.(offsetKey)
	return key == nil || ok
}

// Processor returns the consumer's processor, e.g. to read the partitions'
// watermarks with Checkpoints.
func (c *Consumer) Processor() source.Processor { return c.proc }

// Run joins the group and consumes until ctx is done, then commits what
// committed, leaves the group and returns nil. It returns an error when
// the client cannot be created, and a *RefusedError when the brokers
// refuse the consumer's configuration for good (a session timeout outside
// the group's bounds, say), which no retry can change. Run may be called
// once.
func (c *Consumer) Run(ctx context.Context) error {
	if err := c.running.Start("kafka"); err != nil {
		return err
	}
	cl, err := kgo.NewClient(c.clientOptions()...)
	if err != nil {
		return fmt.Errorf("kafka: creating the client: %w", err)
	}
	c.client.Store(cl)
	close(c.clientSet)
	defer c.shutdown(cl)
	for {
		fetches := c.poll(ctx, cl)
		if ctx.Err() != nil || fetches.IsClientClosed() {
			cl.AllowRebalance()
			return nil
		}
		if refused := c.fetchErrors(ctx, fetches); refused != nil {
			cl.AllowRebalance()
			return refused
		}
		c.setProcessing(true)
		refused := c.handlePoll(ctx, cl, fetches)
		c.setProcessing(false)
		cl.AllowRebalance()
		if refused != nil {
			return refused
		}
	}
}

// fetchErrors logs the errors of a poll and returns a *RefusedError if the
// brokers refuse the consumer for good.
func (c *Consumer) fetchErrors(ctx context.Context, fetches kgo.Fetches) error {
	var refused error
	fetches.EachError(func(topic string, partition int32, err error) {
		if refused == nil && refusedForGood(err) {
			refused = &RefusedError{Topic: topic, Err: err}
			return
		}
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			c.cfg.Logger.WarnContext(ctx, "kafka: fetch error", "topic", topic, "partition", partition, "err", err)
		}
	})
	return refused
}

// setProcessing marks the span between a poll and its AllowRebalance, in
// which a rebalance can wait for this member. Leaving it clears abandon:
// the client signals a waiting rebalance from a goroutine of its own, and a
// late signal must not abandon the next poll's work.
func (c *Consumer) setProcessing(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.processing = on
	c.abandon.Store(false)
}

// retryCommitEvery is how often offsets whose commit failed are tried again
// while no records arrive.
const retryCommitEvery = time.Second

// poll polls records; while offset commits are pending it returns after
// retryCommitEvery even without records, so that they are tried again. A
// commit that becomes pending during the poll (an assignment resumed after
// the database watermarks, with no record left to fetch) ends it at once:
// otherwise the offsets would wait for the next record, and an idle topic
// would show the lag of the crash for ever.
func (c *Consumer) poll(ctx context.Context, cl *kgo.Client) kgo.Fetches {
	pctx, wake := context.WithCancel(ctx)
	defer wake()
	c.mu.Lock()
	pending := len(c.pending) > 0
	c.wakePoll = wake
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.wakePoll = nil
		c.mu.Unlock()
	}()
	if pending {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(pctx, retryCommitEvery)
		defer cancel()
	}
	return cl.PollRecords(pctx, c.cfg.MaxPollRecords)
}

func (c *Consumer) clientOptions() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.cfg.Seeds...),
		kgo.ConsumeTopics(c.cfg.Topics...),
		kgo.ConsumerGroup(c.cfg.Group),
		kgo.DisableAutoCommit(),
		// Rebalances wait until the records of a poll are processed and
		// their offsets committed (or abandoned): a revoked partition
		// never has a batch in flight, and no commit lands on a partition
		// this member no longer owns.
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsCallbackBlocked(c.rebalanceWaits),
		kgo.AdjustFetchOffsetsFn(c.adjustOffsets),
		// Registering OnPartitionsAssigned also gates the assignment with
		// the polls (see BlockRebalanceOnPoll).
		kgo.OnPartitionsAssigned(func(ctx context.Context, _ *kgo.Client, assigned map[string][]int32) {
			c.cfg.Logger.DebugContext(ctx, "kafka: partitions assigned", "partitions", assigned)
		}),
		kgo.OnPartitionsRevoked(c.revoked),
		kgo.OnPartitionsLost(c.forget),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// A paused partition resumes after the fetch in flight returns.
		kgo.FetchMaxWait(500 * time.Millisecond),
	}
	return append(opts, c.cfg.ClientOptions...)
}

// shutdown ends the pauses and leaves the group. Every batch's offsets were
// committed (or abandoned) before the poll that follows it.
func (c *Consumer) shutdown(cl *kgo.Client) {
	c.mu.Lock()
	for tp, st := range c.parts {
		if st.resume != nil {
			st.resume.Stop()
		}
		delete(c.parts, tp)
	}
	c.mu.Unlock()
	cl.Close()
	c.stopped.Store(true)
}

// Joined reports whether the consumer is a member of its group: Run's
// client has joined it (it has a member id and generation) and has not
// left. It is false before the first join completes, which can take a
// session timeout after a member died; Ready reports it.
func (c *Consumer) Joined() bool {
	cl := c.client.Load()
	if cl == nil || c.stopped.Load() {
		return false
	}
	member, generation := cl.GroupMetadata()
	return member != "" && generation > 0
}

// state returns the state of a partition, creating it.
func (c *Consumer) state(tp topicPartition) *partitionState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.parts[tp]
	if st == nil {
		st = &partitionState{watermark: -1}
		c.parts[tp] = st
	}
	return st
}

// RefusedError is what Run returns when the brokers refuse the consumer's
// configuration for good: the group's session timeout bounds, the group
// id, its protocol, or the authorization to use the group or a topic.
type RefusedError struct {
	Topic string // the topic refused, or "" for the group
	Err   error  // the broker's error, a kerr.Error (possibly wrapped)
}

// Error says what the broker refused, and why.
func (e *RefusedError) Error() string {
	what := "the consumer group"
	if e.Topic != "" {
		what = fmt.Sprintf("topic %q", e.Topic)
	}
	return fmt.Sprintf("kafka: the brokers refuse %s for good (fix the configuration): %v", what, e.Err)
}

// Unwrap returns the broker's error.
func (e *RefusedError) Unwrap() error { return e.Err }

// refusedForGood reports whether err is a broker's answer that retrying
// with the same configuration cannot change.
func refusedForGood(err error) bool {
	for _, k := range []error{kerr.InvalidSessionTimeout, kerr.InvalidGroupID, kerr.InconsistentGroupProtocol,
		kerr.GroupAuthorizationFailed, kerr.TopicAuthorizationFailed, kerr.UnsupportedAssignor} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}
