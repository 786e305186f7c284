package sqsfake

import (
	"strconv"
	"strings"
	"time"
)

type createQueueIn struct {
	QueueName  string            `json:"QueueName"`
	Attributes map[string]string `json:"Attributes"`
}

type queueURLOut struct {
	QueueUrl string `json:"QueueUrl"` //nolint:revive // the wire name
}

func (s *Server) createQueue(in *createQueueIn) (queueURLOut, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.QueueName == "" {
		return queueURLOut{}, errBadRequest("InvalidParameterValue", "QueueName is required")
	}
	if q := s.queues[in.QueueName]; q != nil {
		return queueURLOut{q.url}, nil
	}
	q := &queue{name: in.QueueName, url: s.URL() + "/" + AccountID + "/" + in.QueueName,
		attrs: map[string]string{}, dedup: map[string]dedupEntry{}}
	for k, v := range defaultAttrs {
		q.attrs[k] = v
	}
	for k, v := range in.Attributes {
		q.attrs[k] = v
	}
	if strings.HasSuffix(in.QueueName, ".fifo") != q.fifo() {
		return queueURLOut{}, errBadRequest("InvalidParameterValue", "a FIFO queue's name ends in .fifo")
	}
	s.queues[in.QueueName] = q
	return queueURLOut{q.url}, nil
}

type getQueueURLIn struct {
	QueueName string `json:"QueueName"`
}

func (s *Server) getQueueURL(in *getQueueURLIn) (queueURLOut, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueOf(in.QueueName)
	if err != nil {
		return queueURLOut{}, err
	}
	return queueURLOut{q.url}, nil
}

type queueIn struct {
	QueueUrl       string            `json:"QueueUrl"` //nolint:revive // the wire name
	AttributeNames []string          `json:"AttributeNames"`
	Attributes     map[string]string `json:"Attributes"`
}

type attributesOut struct {
	Attributes map[string]string `json:"Attributes,omitempty"`
}

func (s *Server) getQueueAttributes(in *queueIn) (attributesOut, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueOf(in.QueueUrl)
	if err != nil {
		return attributesOut{}, err
	}
	now := s.now()
	q.expire(now)
	visible, inFlight, delayed := q.counts(now)
	all := map[string]string{
		"ApproximateNumberOfMessages":           strconv.Itoa(visible),
		"ApproximateNumberOfMessagesNotVisible": strconv.Itoa(inFlight),
		"ApproximateNumberOfMessagesDelayed":    strconv.Itoa(delayed),
		"QueueArn":                              "arn:aws:sqs:us-east-1:" + AccountID + ":" + q.name,
	}
	for k, v := range q.attrs {
		all[k] = v
	}
	out := map[string]string{}
	for _, n := range in.AttributeNames {
		if n == "All" {
			return attributesOut{all}, nil
		}
		if v, ok := all[n]; ok {
			out[n] = v
		}
	}
	return attributesOut{out}, nil
}

type empty struct{}

func (s *Server) setQueueAttributes(in *queueIn) (empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueOf(in.QueueUrl)
	if err != nil {
		return empty{}, err
	}
	for k, v := range in.Attributes {
		q.attrs[k] = v
	}
	return empty{}, nil
}

func (s *Server) deleteQueue(in *queueIn) (empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueOf(in.QueueUrl)
	if err != nil {
		return empty{}, err
	}
	delete(s.queues, q.name)
	return empty{}, nil
}

func (s *Server) purgeQueue(in *queueIn) (empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueOf(in.QueueUrl)
	if err != nil {
		return empty{}, err
	}
	q.msgs = nil
	return empty{}, nil
}

// sendEntry is one message to send (SendMessage, or an entry of
// SendMessageBatch).
type sendEntry struct {
	Id                     string                      `json:"Id"` //nolint:revive // the wire name
	MessageBody            string                      `json:"MessageBody"`
	DelaySeconds           *int                        `json:"DelaySeconds"`
	MessageAttributes      map[string]MessageAttribute `json:"MessageAttributes"`
	MessageDeduplicationId string                      `json:"MessageDeduplicationId"` //nolint:revive // the wire name
	MessageGroupId         string                      `json:"MessageGroupId"`         //nolint:revive // the wire name
}

type sendIn struct {
	QueueUrl string `json:"QueueUrl"` //nolint:revive // the wire name
	sendEntry
	Entries []sendEntry `json:"Entries"`
}

type sendOut struct {
	Id                     string `json:"Id,omitempty"` //nolint:revive // the wire name
	MessageId              string `json:"MessageId"`    //nolint:revive // the wire name
	MD5OfMessageBody       string `json:"MD5OfMessageBody"`
	MD5OfMessageAttributes string `json:"MD5OfMessageAttributes,omitempty"`
	SequenceNumber         string `json:"SequenceNumber,omitempty"`
}

func (s *Server) sendMessage(in *sendIn) (sendOut, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueOf(in.QueueUrl)
	if err != nil {
		return sendOut{}, err
	}
	return s.send(q, in.sendEntry)
}

// batchError is a failed entry of a batch request.
type batchError struct {
	Id          string `json:"Id"` //nolint:revive // the wire name
	Code        string `json:"Code"`
	Message     string `json:"Message"`
	SenderFault bool   `json:"SenderFault"`
}

type batchOut[T any] struct {
	Successful []T          `json:"Successful"`
	Failed     []batchError `json:"Failed"`
}

func (s *Server) sendMessageBatch(in *sendIn) (batchOut[sendOut], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueOf(in.QueueUrl)
	if err != nil {
		return batchOut[sendOut]{}, err
	}
	if err := checkBatch(len(in.Entries)); err != nil {
		return batchOut[sendOut]{}, err
	}
	out := batchOut[sendOut]{Successful: []sendOut{}, Failed: []batchError{}}
	for _, e := range in.Entries {
		r, err := s.send(q, e)
		if err != nil {
			ae := err.(*apiError)
			out.Failed = append(out.Failed, batchError{Id: e.Id, Code: ae.code, Message: ae.msg, SenderFault: true})
			continue
		}
		r.Id = e.Id
		out.Successful = append(out.Successful, r)
	}
	return out, nil
}

func checkBatch(n int) error {
	switch {
	case n == 0:
		return errBadRequest("EmptyBatchRequest", "the batch request does not contain any entries")
	case n > 10:
		return errBadRequest("TooManyEntriesInBatchRequest", "at most 10 entries per batch, got %d", n)
	}
	return nil
}

// send stores one message. Call with s.mu held.
func (s *Server) send(q *queue, e sendEntry) (sendOut, error) {
	now := s.now()
	q.expire(now)
	out := sendOut{MD5OfMessageBody: md5Hex(e.MessageBody), MD5OfMessageAttributes: md5OfAttributes(e.MessageAttributes)}
	m := &message{body: e.MessageBody, attrs: e.MessageAttributes, sentAt: now, visibleAt: now}
	if q.fifo() {
		if e.MessageGroupId == "" {
			return sendOut{}, errBadRequest("MissingParameter", "MessageGroupId is required in a FIFO queue")
		}
		m.groupID, m.dedupID = e.MessageGroupId, e.MessageDeduplicationId
		if m.dedupID == "" && q.attrs["ContentBasedDeduplication"] == "true" {
			m.dedupID = contentDedupID(e.MessageBody)
		}
		if m.dedupID == "" {
			return sendOut{}, errBadRequest("InvalidParameterValue", "MessageDeduplicationId is required without ContentBasedDeduplication")
		}
		if d, ok := q.dedup[m.dedupID]; ok {
			out.MessageId = d.messageID // accepted, not stored again
			return out, nil
		}
	}
	m.id = s.nextID("msg")
	delay := q.seconds("DelaySeconds")
	if e.DelaySeconds != nil && !q.fifo() {
		delay = time.Duration(*e.DelaySeconds) * time.Second
	}
	m.visibleAt = now.Add(delay)
	if q.fifo() {
		q.dedup[m.dedupID] = dedupEntry{m.id, now}
		m.seq = strconv.FormatInt(s.seq, 10)
		out.SequenceNumber = m.seq
	}
	q.msgs = append(q.msgs, m)
	out.MessageId = m.id
	s.wake()
	return out, nil
}
