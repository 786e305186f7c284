package sqsfake

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"time"
)

// queue is one queue and its messages, in send order.
type queue struct {
	name  string
	url   string
	attrs map[string]string
	msgs  []*message
	// dedup maps a FIFO deduplication id to the message id it was sent
	// as, and when.
	dedup map[string]dedupEntry
}

type dedupEntry struct {
	messageID string
	at        time.Time
}

// message is one stored message.
type message struct {
	id           string
	body         string
	attrs        map[string]MessageAttribute
	sentAt       time.Time
	visibleAt    time.Time
	receiveCount int
	firstReceive time.Time
	receipt      string // the latest receipt handle; "" before the first receive
	groupID      string
	dedupID      string
	seq          string
}

// MessageAttribute is a message attribute as the JSON protocol carries it.
type MessageAttribute struct {
	DataType    string `json:"DataType"`
	StringValue string `json:"StringValue,omitempty"`
	BinaryValue []byte `json:"BinaryValue,omitempty"`
}

var defaultAttrs = map[string]string{
	"VisibilityTimeout":             "30",
	"MessageRetentionPeriod":        "345600",
	"DelaySeconds":                  "0",
	"ReceiveMessageWaitTimeSeconds": "0",
	"MaximumMessageSize":            "262144",
}

func (q *queue) fifo() bool { return q.attrs["FifoQueue"] == "true" }

func (q *queue) seconds(attr string) time.Duration {
	n, _ := strconv.Atoi(q.attrs[attr])
	return time.Duration(n) * time.Second
}

// expire drops the messages older than the retention period.
func (q *queue) expire(now time.Time) {
	keep := now.Add(-q.seconds("MessageRetentionPeriod"))
	q.msgs = slices.DeleteFunc(q.msgs, func(m *message) bool { return m.sentAt.Before(keep) })
	for id, e := range q.dedup {
		if now.Sub(e.at) > 5*time.Minute {
			delete(q.dedup, id)
		}
	}
}

// counts returns the visible, in-flight and delayed messages.
func (q *queue) counts(now time.Time) (visible, inFlight, delayed int) {
	for _, m := range q.msgs {
		switch {
		case !m.visibleAt.After(now):
			visible++
		case m.receiveCount > 0:
			inFlight++
		default:
			delayed++
		}
	}
	return visible, inFlight, delayed
}

// receivable returns up to max visible messages; in a FIFO queue a message
// group with a message in flight delivers nothing more.
func (q *queue) receivable(now time.Time, max int) []*message {
	blocked := map[string]bool{}
	var out []*message
	for _, m := range q.msgs {
		if len(out) == max {
			break
		}
		visible := !m.visibleAt.After(now)
		if q.fifo() {
			if blocked[m.groupID] {
				continue
			}
			if !visible {
				blocked[m.groupID] = true
				continue
			}
		}
		if visible {
			out = append(out, m)
		}
	}
	return out
}

// nextVisible is when the next invisible message becomes visible.
func (q *queue) nextVisible(now time.Time) (time.Time, bool) {
	var next time.Time
	for _, m := range q.msgs {
		if m.visibleAt.After(now) && (next.IsZero() || m.visibleAt.Before(next)) {
			next = m.visibleAt
		}
	}
	return next, !next.IsZero()
}

// byReceipt finds the message whose latest receipt handle is h.
func (q *queue) byReceipt(h string) (int, *message) {
	for i, m := range q.msgs {
		if m.receipt == h {
			return i, m
		}
	}
	return -1, nil
}

func contentDedupID(body string) string {
	h := sha256.Sum256([]byte(body))
	return hex.EncodeToString(h[:])
}
