package txinbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/txinbox/txinbox/store"
)

// item is one distinct (scope, id) of a batch.
type item struct {
	msg      *Message
	row      *store.ClaimRow // in the batch's claimRows or effectRows
	res      Result
	stored   []byte // the committed payload hash, for Duplicate and Drift
	failed   bool   // its handler failed: an attempt is recorded after the commit
	excluded bool   // failed in the optimistic pass: not run again in this batch
	headers  string // Config.Effect.Headers of the message
}

// noIDMessage is a message refused before the claim and dead-lettered:
// it has no id, or a field the database cannot store (validate).
type noIDMessage struct {
	msg    *Message
	hash   []byte
	res    Result
	err    error
	reason string
}

// repeat is a later copy of an id already in the batch: it is not claimed
// (a JOIN against the claim's result would run the effect twice); it gets
// its outcome from the first copy.
type repeat struct {
	of   *item
	hash []byte
}

// slot says where the result of one input message comes from.
type slot struct {
	it   *item
	rep  *repeat
	noID *noIDMessage
}

type batch struct {
	cp      *Checkpoint // nil: no checkpoint to save
	alone   bool        // a suspect run alone: blamed if it loses its connection again
	slots   []slot
	items   []*item
	repeats []*repeat
	noID    []*noIDMessage

	// The claim's rows of items, aligned with them, handed to the store
	// as they are: claimRows for a handler, effectRows for Config.Effect.
	claimRows  []store.ClaimRow
	effectRows []store.EffectRow

	// handlerTime sums the time spent in handlers over every transaction
	// attempt; commitTime is the COMMIT round trip of the last attempt
	// (zero if it did not reach its commit). They feed BatchInfo.
	handlerTime time.Duration
	commitTime  time.Duration
}

// refused reports whether a message of the batch carries a Refusal.
func (b *batch) refused() bool {
	for _, it := range b.items {
		if it.msg.Refusal != nil {
			return true
		}
	}
	return false
}

// prepare builds the batch of msgs; with headers, each message's
// Config.Effect.Headers is encoded (encodesHeaders).
func (p *Processor[TTx]) prepare(msgs []*Message, headers bool) *batch {
	b := &batch{slots: make([]slot, len(msgs)), items: make([]*item, 0, len(msgs))}
	seen := make(map[store.Key]*item, len(msgs))
	p.fillDefaults(msgs)
	// The items and the payload hashes are allocated once per batch, not
	// once per message.
	slab := make([]item, len(msgs))
	if p.cfg.Effect != nil {
		b.effectRows = make([]store.EffectRow, 0, len(msgs))
	} else {
		b.claimRows = make([]store.ClaimRow, 0, len(msgs))
	}
	hashes := make([]byte, len(msgs)*sha256.Size)
	for i, m := range msgs {
		hash := hashes[i*sha256.Size : (i+1)*sha256.Size : (i+1)*sha256.Size]
		h := m.PayloadHash()
		copy(hash, h[:])
		var refuse *noIDMessage
		if m.ID == "" {
			refuse = &noIDMessage{msg: m, hash: hash, err: ErrNoMessageID, reason: "no message id"}
		} else if bad := validate(m); bad != nil {
			refuse = &noIDMessage{msg: m, hash: hash, err: bad, reason: "invalid message"}
		}
		var encoded string
		if refuse == nil && headers {
			var err error
			if encoded, err = p.effectHeaders(m); err != nil {
				refuse = &noIDMessage{msg: m, hash: hash, err: err, reason: "invalid message"}
			}
		}
		if refuse != nil {
			b.noID = append(b.noID, refuse)
			b.slots[i].noID = refuse
			continue
		}
		key := store.Key{Scope: m.Scope, MessageID: m.ID}
		if first, ok := seen[key]; ok {
			r := &repeat{of: first, hash: hash}
			b.repeats = append(b.repeats, r)
			b.slots[i].rep = r
			continue
		}
		row := store.ClaimRow{Key: key, Source: m.Source, SourcePosition: m.SourcePosition,
			PartitionKey: m.PartitionKey, PayloadHash: hash, ReceivedAt: m.ReceivedAt}
		it := &slab[i]
		*it = item{msg: m, headers: encoded}
		// Appended within the capacity: the pointers stay valid.
		if b.effectRows != nil {
			b.effectRows = append(b.effectRows, store.EffectRow{ClaimRow: row, Payload: m.Payload, Headers: encoded})
			it.row = &b.effectRows[len(b.effectRows)-1].ClaimRow
		} else {
			b.claimRows = append(b.claimRows, row)
			it.row = &b.claimRows[len(b.claimRows)-1]
		}
		seen[key] = it
		b.items = append(b.items, it)
		b.slots[i].it = it
	}
	return b
}

// reset forgets the outcomes of a transaction that did not commit.
func (b *batch) reset() {
	b.commitTime = 0
	for _, it := range b.items {
		it.res, it.stored, it.failed, it.excluded = Result{}, nil, false, false
	}
	for _, nm := range b.noID {
		nm.res = Result{}
	}
}

// checkpoint returns the position of the last message of the longest prefix
// of acked outcomes, and false when there is none (or no checkpoint).
func (b *batch) checkpoint() (int64, bool) {
	if b.cp == nil {
		return 0, false
	}
	last := -1
	for i, s := range b.slots {
		var o Outcome
		switch {
		case s.it != nil:
			o = s.it.res.Outcome
		case s.rep != nil:
			o = s.rep.result(0).Outcome
		default:
			o = DeadLettered // dead-lettered in this transaction
		}
		if !o.Ack() {
			break
		}
		last = i
	}
	if last < 0 {
		return 0, false
	}
	return b.cp.Positions[last], true
}

// fill copies the final outcomes into results, aligned with the input.
func (b *batch) fill(results []Result, retryAfter time.Duration) {
	for i, s := range b.slots {
		switch {
		case s.it != nil:
			results[i] = s.it.res
		case s.noID != nil:
			results[i] = s.noID.res
		default:
			results[i] = s.rep.result(retryAfter)
		}
	}
}

// committedHash is the payload hash that the inbox (or the dead-letter
// table) holds for the item's key once the transaction commits, or nil if
// it will hold none.
func (it *item) committedHash() []byte {
	switch it.res.Outcome {
	case Processed:
		return it.row.PayloadHash
	case Duplicate, Drift:
		return it.stored
	case DeadLettered:
		return it.stored // the dead letter's hash, when the claim found one
	}
	return nil
}

func (r *repeat) drifted() bool {
	h := r.of.committedHash()
	return h != nil && !bytes.Equal(h, r.hash)
}

// errRepeatUnrecorded is the Result.Err of a later copy of an id with
// another payload than its first copy, which failed in the same batch.
var errRepeatUnrecorded = errors.New("txinbox: an earlier copy of this id with another payload failed in the same batch; redeliver this one to record it")

// result is the outcome of a later copy. Behind a first copy that failed
// in this batch (whatever RecordFailures makes of it), a copy with the
// same payload shares its outcome, a copy with another payload is a Retry:
// acked now, its payload would be recorded nowhere; redelivered, it meets
// the inbox row or the dead letter and is recorded as drift.
func (r *repeat) result(retryAfter time.Duration) Result {
	if r.of.failed {
		if !bytes.Equal(r.of.row.PayloadHash, r.hash) {
			return Result{Outcome: Retry, Err: errRepeatUnrecorded, RetryAfter: retryAfter}
		}
		return r.of.res
	}
	switch r.of.res.Outcome {
	case Processed, Duplicate, Drift:
		if r.drifted() {
			return Result{Outcome: Drift}
		}
		return Result{Outcome: Duplicate, Reply: r.of.reply()}
	case DeadLettered:
		if r.drifted() { // against the dead letter found by the claim
			return Result{Outcome: Drift, Err: r.of.res.Err}
		}
	}
	return r.of.res
}

// repeatDrift returns the drift rows of in-batch repeats, recorded just
// before the commit, once the first copies' outcomes are known.
func (b *batch) repeatDrift(now func() store.DriftRow) []store.DriftRow {
	var rows []store.DriftRow
	for _, r := range b.repeats {
		if r.drifted() {
			d := now()
			d.Key, d.Source, d.SourcePosition = r.of.row.Key, r.of.row.Source, r.of.row.SourcePosition
			d.StoredHash, d.ReceivedHash = r.of.committedHash(), r.hash
			rows = append(rows, d)
		}
	}
	return rows
}

// encodesHeaders reports whether a batch's messages get their headers
// encoded for Config.Effect: there is a Headers function, and the store
// does not know the statements to leave new_messages' payload and
// headers unread (store.EffectReader).
func (p *Processor[TTx]) encodesHeaders(ctx context.Context) bool {
	if p.cfg.Effect == nil || p.cfg.Effect.Headers == nil {
		return false
	}
	if r, ok := p.driver.(store.EffectReader); ok {
		return r.EffectReadsMessages(ctx, p.cfg.Effect.Statements)
	}
	return true
}

// effectHeaders encodes m's headers for Config.Effect (encodesHeaders
// said it has a Headers function).
func (p *Processor[TTx]) effectHeaders(m *Message) (string, error) {
	h, err := p.cfg.Effect.Headers(m)
	if err != nil {
		return "", fmt.Errorf("txinbox: Config.Effect.Headers: %w", err)
	}
	return h, nil
}

// callHandler runs the configured handler for msgs, turning a panic into a
// *PanicError; a message's Refusal fails it without running the handler.
// With Config.Effect there is no handler: the effect ran in the claim (and
// a refused message's claim is rolled back with its failure).
func (p *Processor[TTx]) callHandler(ctx context.Context, tx TTx, msgs []*Message) (err error) {
	for _, m := range msgs {
		if m.Refusal != nil {
			return m.Refusal // a batch is redone one message at a time
		}
	}
	if p.cfg.Effect != nil {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	for _, m := range msgs {
		m.Reply = nil // only the run that commits leaves one
	}
	if p.cfg.BatchHandler != nil {
		return p.cfg.BatchHandler(ctx, tx, msgs)
	}
	for _, m := range msgs {
		if err := p.cfg.Handler(handlerContext(ctx, m), tx, m); err != nil {
			return err
		}
	}
	return nil
}

func (p *Processor[TTx]) failureRow(it *item) store.FailureRow {
	var perm *PermanentError
	isPerm := errors.As(it.res.Err, &perm)
	reason := "max attempts"
	if isPerm {
		reason = "permanent error"
	}
	return store.FailureRow{
		Key: it.row.Key, Error: safeText(it.res.Err.Error()), FailedAt: p.cfg.Now(), Permanent: isPerm,
		DeadLetter: p.deadLetterRow(it.msg, it.row.PayloadHash, 0, reason, it.res.Err.Error()),
	}
}

// deadLetterRow is m as the dead-letter table can hold it: a field the
// database cannot store is replaced by a stand-in (storable) and its raw
// bytes go, base64-encoded, into a header "txinbox-raw-<field>".
func (p *Processor[TTx]) deadLetterRow(m *Message, hash []byte, attempts int, reason, lastErr string) store.DeadLetterRow {
	var raw [][2]string
	fix := func(name, s string, tooLong bool) string {
		if !tooLong && textProblem(s) == "" {
			return s
		}
		raw = append(raw, [2]string{name, s})
		return standIn(s)
	}
	scope := fix("scope", m.Scope, len(m.Scope) > MaxKeyBytes/2 && len(m.Scope)+len(m.ID) > MaxKeyBytes)
	id := fix("id", m.ID, len(scope)+len(m.ID) > MaxKeyBytes)
	return store.DeadLetterRow{
		Key: store.Key{Scope: scope, MessageID: id}, Source: fix("source", m.Source, false),
		SourcePosition: fix("source_position", m.SourcePosition, false), PartitionKey: fix("partition_key", m.PartitionKey, false),
		Payload: m.Payload, PayloadHash: hash, HeadersJSON: headersJSON(m.Headers, raw),
		Attempts: attempts, Reason: reason, LastError: safeText(lastErr), ReceivedAt: m.ReceivedAt, DeadLetteredAt: p.cfg.Now(),
	}
}
