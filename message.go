package txinbox

import (
	"context"
	"crypto/sha256"
	"time"
)

// Message is one delivery from a broker, as the inbox sees it.
type Message struct {
	// Scope is the bounded context or consumer group that owns the inbox
	// entry. The unique key is (Scope, ID), so two consumer groups reading
	// one topic each process every message once. Defaults to Config.Scope.
	Scope string
	// ID is the message id: a transport id (Kafka topic/partition/offset,
	// AMQP message_id, SQS MessageId) or a content key (EDIFACT UNB, AS4
	// MessageId). A message without one is dead-lettered.
	ID string
	// Source names where the message came from: topic, queue or partner.
	Source string
	// SourcePosition is the position in the source, e.g. "3:1042" for a
	// Kafka partition and offset. Informational.
	SourcePosition string
	// PartitionKey is the ordering key (Kafka record key, partner id).
	PartitionKey string
	// Payload is the message body. Its SHA-256 is stored with the key and
	// compared on redelivery (drift detection).
	Payload []byte
	// Headers are the transport headers, kept in dead letters.
	Headers []Header
	// ReceivedAt is when the message was received. Defaults to the time
	// the processor first saw it.
	ReceivedAt time.Time
	// Refusal, when set, is the error the message fails with in place of
	// its handler's, should it be new: a source's delivery-count guard
	// sets a Permanent error to dead-letter a message its broker
	// delivered too often, in the transaction that would have run the
	// handler. A duplicate of a committed message is still a Duplicate.
	// Not stored. Defaults to nil: the handler runs.
	Refusal error
	// Fingerprint, when it holds 32 bytes, is stored and compared (drift)
	// in place of the SHA-256 of Payload: a transport whose identity of a
	// request is more than its body (an HTTP request's method, path and
	// chosen headers: package httpinbox). Defaults to nil: the payload's
	// SHA-256.
	Fingerprint []byte
	// Reply is what the handler leaves for later duplicates: with
	// Config.Replies, the processor stores it in the message's inbox row in
	// the handler's transaction, and a later delivery of the same (scope,
	// id) gets it back in Result.Reply. The processor clears it before each
	// run of the handler, so only the run that commits leaves it. Not
	// compared, not part of the payload hash.
	Reply []byte

	// ctx is the context Submit was called with, whose values the
	// handler sees (handlerContext).
	ctx context.Context
}

// Header is one transport header. Keys may repeat.
type Header struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Header returns the value of the first header named key, or "".
func (m *Message) Header(key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return ""
}

// PayloadHash returns the hash stored in the inbox and compared on
// redelivery: the Fingerprint when it holds 32 bytes, else the SHA-256 of
// the payload.
func (m *Message) PayloadHash() [32]byte {
	if len(m.Fingerprint) == sha256.Size {
		return [32]byte(m.Fingerprint)
	}
	return sha256.Sum256(m.Payload)
}
