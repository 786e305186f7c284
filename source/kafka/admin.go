package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/source"
)

// Ready returns nil when Run's client reaches a broker and is a member of
// the group; joining can take a session timeout after a member died.
func (c *Consumer) Ready(ctx context.Context) error {
	cl := c.client.Load()
	if cl == nil || c.stopped.Load() {
		return errors.New("not running")
	}
	if err := cl.Ping(ctx); err != nil {
		return err
	}
	if !c.Joined() {
		return fmt.Errorf("not a member of group %q yet", c.cfg.Group)
	}
	return nil
}

// Lag returns, per partition of the group's topics ("invoices/3"), the end
// offset less the group's committed offset.
func (c *Consumer) Lag(ctx context.Context) ([]source.Lag, error) {
	var out []source.Lag
	err := c.admin(func(adm *kadm.Client) error {
		lags, err := adm.Lag(ctx, c.cfg.Group)
		if err == nil {
			err = lags.Error()
		}
		if err != nil {
			return err
		}
		for _, l := range lags[c.cfg.Group].Lag.Sorted() {
			if l.Err == nil {
				out = append(out, source.Lag{Partition: l.Topic + "/" + strconv.Itoa(int(l.Partition)), Messages: l.Lag})
			}
		}
		return nil
	})
	return out, err
}

// RedeliveryHorizons returns each topic's retention.ms, or for ever for a
// compacted topic (cleanup.policy=compact keeps the last record of every
// key whatever retention.ms says): a group whose offsets are reset reads
// every record the topic still keeps. With
// OffsetKey it returns none, and logs so: a record read again is at or
// below its partition's watermark, which the inbox keeps whatever the
// retention. This is the one place that decides it.
func (c *Consumer) RedeliveryHorizons(ctx context.Context) ([]source.Horizon, error) {
	if c.offsetKeyed {
		c.cfg.Logger.InfoContext(ctx, "txinbox: Kafka retention not checked: offset-keyed records stay covered by the partitions' watermarks",
			"topics", c.cfg.Topics)
		return nil, nil
	}
	var hs []source.Horizon
	err := c.admin(func(adm *kadm.Client) error {
		rcs, err := adm.DescribeTopicConfigs(ctx, c.cfg.Topics...)
		if err != nil {
			return fmt.Errorf("kafka: reading the topics' retention.ms: %w", err)
		}
		for _, t := range c.cfg.Topics {
			h, err := topicHorizons(rcs, t)
			if err != nil {
				return err
			}
			hs = append(hs, h...)
		}
		return nil
	})
	return hs, err
}

// topicHorizons reads retention.ms and cleanup.policy of topic t from
// rcs. A compacted topic (cleanup.policy=compact without delete) keeps the
// last record of every key for ever, whatever its retention.ms: a group
// whose offsets are reset reads those again, however old.
func topicHorizons(rcs kadm.ResourceConfigs, t string) ([]source.Horizon, error) {
	rc, err := rcs.On(t, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: reading retention.ms of topic %q: %w", t, err)
	}
	var retention, policy *string
	for _, cfg := range rc.Configs {
		switch cfg.Key {
		case "retention.ms":
			retention = cfg.Value
		case "cleanup.policy":
			policy = cfg.Value
		}
	}
	what := fmt.Sprintf("Kafka topic %q", t)
	if policy != nil && compactedOnly(*policy) {
		figure := "cleanup.policy=" + *policy + " (the last record of every key is kept for ever"
		if retention != nil {
			figure += "; retention.ms=" + *retention + " does not apply"
		}
		return []source.Horizon{{What: what, Figure: figure + ")", Forever: true}}, nil
	}
	if retention == nil {
		return nil, nil
	}
	ms, err := strconv.ParseInt(*retention, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("kafka: topic %q: retention.ms %q: %w", t, *retention, err)
	}
	h := source.Horizon{What: what, Figure: "retention.ms=" + *retention, Forever: ms < 0}
	if ms >= 0 {
		h.Within = time.Duration(ms) * time.Millisecond
		h.Figure += " (" + duration.Format(h.Within) + ")"
	}
	return []source.Horizon{h}, nil
}

// compactedOnly reports whether a cleanup.policy compacts without
// deleting by time ("compact"; not "delete" or "compact,delete").
func compactedOnly(policy string) bool {
	compact, del := false, false
	for p := range strings.SplitSeq(policy, ",") {
		switch strings.TrimSpace(p) {
		case "compact":
			compact = true
		case "delete":
			del = true
		}
	}
	return compact && !del
}

// admin runs f with an admin client: over Run's client while Run runs,
// else over a client of its own (Seeds and ClientOptions), closed after.
func (c *Consumer) admin(f func(*kadm.Client) error) error {
	if cl := c.client.Load(); cl != nil && !c.stopped.Load() {
		return f(kadm.NewClient(cl))
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.cfg.Seeds...)}, c.cfg.ClientOptions...)...)
	if err != nil {
		return fmt.Errorf("kafka: creating an admin client: %w", err)
	}
	defer cl.Close()
	return f(kadm.NewClient(cl))
}
