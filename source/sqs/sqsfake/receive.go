package sqsfake

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

type receiveIn struct {
	QueueUrl                    string   `json:"QueueUrl"` //nolint:revive // the wire name
	MaxNumberOfMessages         int      `json:"MaxNumberOfMessages"`
	WaitTimeSeconds             *int     `json:"WaitTimeSeconds"`
	VisibilityTimeout           *int     `json:"VisibilityTimeout"`
	AttributeNames              []string `json:"AttributeNames"`
	MessageSystemAttributeNames []string `json:"MessageSystemAttributeNames"`
	MessageAttributeNames       []string `json:"MessageAttributeNames"`
}

type receivedMessage struct {
	MessageId              string                      `json:"MessageId"`     //nolint:revive // the wire name
	ReceiptHandle          string                      `json:"ReceiptHandle"` //nolint:revive // the wire name
	MD5OfBody              string                      `json:"MD5OfBody"`
	Body                   string                      `json:"Body"`
	Attributes             map[string]string           `json:"Attributes,omitempty"`
	MessageAttributes      map[string]MessageAttribute `json:"MessageAttributes,omitempty"`
	MD5OfMessageAttributes string                      `json:"MD5OfMessageAttributes,omitempty"`
}

type receiveOut struct {
	Messages []receivedMessage `json:"Messages,omitempty"`
}

// receiveMessage takes up to MaxNumberOfMessages visible messages, waiting
// up to WaitTimeSeconds for one (long polling).
func (s *Server) receiveMessage(ctx context.Context, in *receiveIn) (receiveOut, error) {
	n := in.MaxNumberOfMessages
	if n == 0 {
		n = 1
	}
	if n < 1 || n > 10 {
		return receiveOut{}, errBadRequest("InvalidParameterValue", "MaxNumberOfMessages must be between 1 and 10, got %d", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueOf(in.QueueUrl)
	if err != nil {
		return receiveOut{}, err
	}
	wait := q.seconds("ReceiveMessageWaitTimeSeconds")
	if in.WaitTimeSeconds != nil {
		wait = time.Duration(*in.WaitTimeSeconds) * time.Second
	}
	deadline := s.now().Add(wait)
	for {
		now := s.now()
		q.expire(now)
		if got := q.receivable(now, n); len(got) > 0 || !now.Before(deadline) {
			return s.deliver(q, got, in, now), nil
		}
		if err := s.waitForChange(ctx, q, now, deadline); err != nil {
			return receiveOut{}, err
		}
		if q, err = s.queueOf(in.QueueUrl); err != nil {
			return receiveOut{}, err
		}
	}
}

// waitForChange releases s.mu until a message is sent or made visible, the
// next invisible message of q becomes visible, or the deadline passes.
// Call with s.mu held; it is held again on return.
func (s *Server) waitForChange(ctx context.Context, q *queue, now, deadline time.Time) error {
	until := deadline
	if next, ok := q.nextVisible(now); ok && next.Before(until) {
		until = next
	}
	changed := s.changed
	s.mu.Unlock()
	defer s.mu.Lock()
	t := time.NewTimer(until.Sub(now))
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// deliver makes msgs invisible, counts the receive and gives each a new
// receipt handle. Call with s.mu held.
func (s *Server) deliver(q *queue, msgs []*message, in *receiveIn, now time.Time) receiveOut {
	vis := q.seconds("VisibilityTimeout")
	if in.VisibilityTimeout != nil {
		vis = time.Duration(*in.VisibilityTimeout) * time.Second
	}
	out := receiveOut{}
	for _, m := range msgs {
		m.receiveCount++
		if m.firstReceive.IsZero() {
			m.firstReceive = now
		}
		m.visibleAt = now.Add(vis)
		m.receipt = m.id + "#" + s.nextID("rh")
		rm := receivedMessage{MessageId: m.id, ReceiptHandle: m.receipt, MD5OfBody: md5Hex(m.body), Body: m.body,
			Attributes: systemAttributes(m, append(in.AttributeNames, in.MessageSystemAttributeNames...))}
		rm.MessageAttributes = selectAttributes(m.attrs, in.MessageAttributeNames)
		rm.MD5OfMessageAttributes = md5OfAttributes(rm.MessageAttributes)
		out.Messages = append(out.Messages, rm)
	}
	return out
}

func systemAttributes(m *message, names []string) map[string]string {
	all := map[string]string{
		"ApproximateReceiveCount":          strconv.Itoa(m.receiveCount),
		"ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.firstReceive.UnixMilli(), 10),
		"SentTimestamp":                    strconv.FormatInt(m.sentAt.UnixMilli(), 10),
		"SenderId":                         AccountID,
	}
	if m.groupID != "" {
		all["MessageGroupId"], all["MessageDeduplicationId"], all["SequenceNumber"] = m.groupID, m.dedupID, m.seq
	}
	out := map[string]string{}
	for _, n := range names {
		if n == "All" {
			return all
		}
		if v, ok := all[n]; ok {
			out[n] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// selectAttributes returns the message attributes asked for by name,
// "All", ".*" or a "prefix.*".
func selectAttributes(attrs map[string]MessageAttribute, names []string) map[string]MessageAttribute {
	out := map[string]MessageAttribute{}
	for k, v := range attrs {
		if slices.ContainsFunc(names, func(n string) bool {
			p, wild := strings.CutSuffix(n, ".*")
			return n == "All" || n == k || (wild && strings.HasPrefix(k, p))
		}) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

type receiptEntry struct {
	Id                string `json:"Id"`            //nolint:revive // the wire name
	ReceiptHandle     string `json:"ReceiptHandle"` //nolint:revive // the wire name
	VisibilityTimeout int    `json:"VisibilityTimeout"`
}

type receiptIn struct {
	QueueUrl string `json:"QueueUrl"` //nolint:revive // the wire name
	receiptEntry
	Entries []receiptEntry `json:"Entries"`
}

type idOut struct {
	Id string `json:"Id"` //nolint:revive // the wire name
}

// deleteOne deletes the message whose latest receipt handle is h. As in
// SQS, a stale handle (the message was received again since) succeeds and
// deletes nothing. Call with s.mu held.
func deleteOne(q *queue, h string) error {
	if !strings.Contains(h, "#") {
		return errBadRequest("ReceiptHandleIsInvalid", "the receipt handle %q is not valid", h)
	}
	if i, _ := q.byReceipt(h); i >= 0 {
		q.msgs = slices.Delete(q.msgs, i, i+1)
	}
	return nil
}

// changeOne sets the visibility timeout of the message whose latest
// receipt handle is h. Call with s.mu held.
func (s *Server) changeOne(q *queue, h string, seconds int) error {
	if seconds < 0 || seconds > 43200 {
		return errBadRequest("InvalidParameterValue", "VisibilityTimeout must be between 0 and 43200, got %d", seconds)
	}
	_, m := q.byReceipt(h)
	if m == nil {
		return errBadRequest("ReceiptHandleIsInvalid", "the receipt handle %q is not the latest of an in-flight message", h)
	}
	m.visibleAt = s.now().Add(time.Duration(seconds) * time.Second)
	if seconds == 0 {
		s.wake()
	}
	return nil
}

func (s *Server) deleteMessage(in *receiptIn) (empty, error) {
	return empty{}, s.eachReceipt(in.QueueUrl, func(q *queue) error { return deleteOne(q, in.ReceiptHandle) })
}

func (s *Server) changeVisibility(in *receiptIn) (empty, error) {
	return empty{}, s.eachReceipt(in.QueueUrl, func(q *queue) error {
		return s.changeOne(q, in.ReceiptHandle, in.VisibilityTimeout)
	})
}

func (s *Server) deleteMessageBatch(in *receiptIn) (batchOut[idOut], error) {
	return s.receiptBatch(in, func(q *queue, e receiptEntry) error { return deleteOne(q, e.ReceiptHandle) })
}

func (s *Server) changeVisibilityBatch(in *receiptIn) (batchOut[idOut], error) {
	return s.receiptBatch(in, func(q *queue, e receiptEntry) error {
		return s.changeOne(q, e.ReceiptHandle, e.VisibilityTimeout)
	})
}

func (s *Server) eachReceipt(queueURL string, f func(*queue) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueOf(queueURL)
	if err != nil {
		return err
	}
	return f(q)
}

func (s *Server) receiptBatch(in *receiptIn, f func(*queue, receiptEntry) error) (batchOut[idOut], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueOf(in.QueueUrl)
	if err != nil {
		return batchOut[idOut]{}, err
	}
	if err := checkBatch(len(in.Entries)); err != nil {
		return batchOut[idOut]{}, err
	}
	out := batchOut[idOut]{Successful: []idOut{}, Failed: []batchError{}}
	for _, e := range in.Entries {
		if err := f(q, e); err != nil {
			ae := err.(*apiError)
			out.Failed = append(out.Failed, batchError{Id: e.Id, Code: ae.code, Message: ae.msg, SenderFault: true})
			continue
		}
		out.Successful = append(out.Successful, idOut{e.Id})
	}
	return out, nil
}
