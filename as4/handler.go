package as4

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4/internal/wire"
	"github.com/txinbox/txinbox/internal/httpfront"
	"github.com/txinbox/txinbox/store"
)

// Handler is the AS4 receiving endpoint: an http.Handler that stores each
// user message once through the inbox and answers with a receipt.
type Handler[TTx any] struct {
	cfg  Config[TTx]
	proc *txinbox.Processor[TTx]
	log  *slog.Logger
	// pending hands each request's message to the inbox handler, which
	// receives the same *txinbox.Message that ServeHTTP submitted.
	pending sync.Map // *txinbox.Message → *Received
	// slots holds one token per request being answered.
	slots chan struct{}
	// decompressed holds the decompressed payloads of the requests being
	// answered (Config.MaxDecompressedInFlight).
	decompressed *inFlight
}

// New returns a Handler that deduplicates through driver's inbox and
// stores messages with cfg.Store. Call Close when the server has stopped.
func New[TTx any](driver store.Driver[TTx], cfg Config[TTx]) (*Handler[TTx], error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	h := &Handler[TTx]{cfg: cfg, log: cfg.Logger, slots: make(chan struct{}, cfg.MaxConcurrentRequests),
		decompressed: &inFlight{max: cfg.MaxDecompressedInFlight}}
	inbox := cfg.Inbox
	inbox.Handler = h.save
	p, err := txinbox.NewProcessor(driver, inbox)
	if err != nil {
		return nil, err
	}
	h.proc = p
	return h, nil
}

// Close stops the handler's batcher after the messages in flight are
// committed. Stop the HTTP server first (http.Server.Shutdown).
func (h *Handler[TTx]) Close() { h.proc.Close() }

// save is the inbox handler: it stores the message and runs Deliver, in
// the inbox transaction.
func (h *Handler[TTx]) save(ctx context.Context, tx TTx, m *txinbox.Message) error {
	v, ok := h.pending.Load(m)
	if !ok {
		return fmt.Errorf("as4: message %q has no pending request", m.ID)
	}
	rec := v.(*Received)
	if err := h.cfg.Store.Save(ctx, tx, rec); err != nil {
		return fmt.Errorf("as4: storing message: %w", err)
	}
	if h.cfg.Deliver != nil {
		return h.cfg.Deliver(ctx, tx, rec)
	}
	return nil
}

// ServeHTTP answers one POSTed AS4 message.
func (h *Handler[TTx]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "AS4 messages are sent with POST", http.StatusMethodNotAllowed)
		return
	}
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		h.fail(w, soap12, busy(cap(h.slots)))
		return
	}
	body, f := h.readBody(w, r)
	if f != nil {
		h.fail(w, soap12, f)
		return
	}
	sec, plain, contentType, f := h.verifySecurity(body, r.Header.Get("Content-Type"))
	if f != nil {
		h.fail(w, guessSOAP(body), f)
		return
	}
	policy := securityPolicy{accept: h.cfg.AcceptUnverifiedSecurity || sec.Signed || sec.Encrypted,
		verifier: h.cfg.Security.Verifier != nil, unread: sec.unread}
	lim := h.limits()
	lim.reserve = h.decompressed.reservation()
	defer lim.reserve.release()
	req, err := readRequest(plain, contentType, lim, policy)
	var sig *signalRequest
	switch {
	case errors.As(err, &sig):
		h.signal(w, guessSOAP(body), sig)
	case errors.As(err, &f):
		h.fail(w, guessSOAP(body), f)
	case err != nil:
		h.fail(w, soap12, receiverFailure(http.StatusInternalServerError, err.Error(), err))
	case h.cfg.Security.RequireSignature && !sec.Signed:
		h.fail(w, soapOf(req.msg.SOAPVersion), withRef(senderFailure(PolicyNoncompliance, "the message is not signed; this endpoint requires a WS-Security signature"), req.msg.MessageID))
	default:
		req.security = sec
		if req.agreement, f = matchAgreement(h.cfg.Agreements, req); f != nil {
			h.fail(w, soapOf(req.msg.SOAPVersion), withRef(f, req.user.MessageID))
			return
		}
		h.deliver(w, r, req)
	}
}

func (h *Handler[TTx]) limits() limits {
	return limits{depth: h.cfg.MaxDepth, elements: h.cfg.MaxElements, decompressed: h.cfg.MaxDecompressedBytes}
}

// Refuse answers a request that the HTTP front in front of the handler
// (package server's endpoints) refused before the handler ran: too many
// requests of the client, a body too slow or too large, too many bodies
// in flight. The answer is an ebMS error (EBMS:0004) with the front's
// status, as the endpoint's own refusals are.
func (h *Handler[TTx]) Refuse(w http.ResponseWriter, _ *http.Request, status int, detail string) {
	f := receiverFailure(status, detail, nil)
	if status < 500 {
		f = &failure{Code: Other, Status: status, Detail: detail, fault: faultSender}
	}
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		f.retryAfter = 1
	}
	h.fail(w, soap12, f)
}

// readBody reads the request body up to Config.MaxBodyBytes; a body the
// HTTP front read already is taken as it is.
func (h *Handler[TTx]) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *failure) {
	limit := h.cfg.MaxBodyBytes
	tooLarge := &failure{Code: Other, Status: http.StatusRequestEntityTooLarge, fault: faultSender,
		Detail: fmt.Sprintf("the message is larger than the endpoint's limit of %d bytes", limit)}
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	if body, ok := httpfront.Body(r); ok {
		return body, nil
	}
	// A body of known length is read into one buffer of that size.
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	body := buf.Bytes()
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge
	case err != nil:
		return nil, senderFailure(Other, "reading the request body: "+err.Error())
	}
	return body, nil
}

// deliver submits a user message to the inbox and answers with the
// receipt, the original receipt of a duplicate, or an ebMS error.
func (h *Handler[TTx]) deliver(w http.ResponseWriter, r *http.Request, req *request) {
	rec, f := h.newReceived(req)
	if f != nil {
		h.fail(w, soapOf(req.msg.SOAPVersion), f)
		return
	}
	msg := &txinbox.Message{
		Scope: rec.Scope, ID: rec.Key, Source: "as4", SourcePosition: r.RemoteAddr,
		PartitionKey: req.msg.Sender().ID, Payload: rec.Fingerprint, ReceivedAt: rec.ReceivedAt,
		Headers: []txinbox.Header{{Key: "Content-Type", Value: wire.CleanText(r.Header.Get("Content-Type"))}},
	}
	h.pending.Store(msg, rec)
	// Submit must not return before the batch is done: if it returned when
	// the client hung up, the pending entry would be gone before the batch
	// ran the handler, which would fail and redo the whole batch. A message
	// whose sender hung up is still stored; its retry gets the receipt.
	res, err := h.proc.Submit(context.WithoutCancel(r.Context()), msg)
	h.pending.Delete(msg)
	v := soapOf(rec.SOAPVersion)
	if err != nil {
		f := receiverFailure(http.StatusServiceUnavailable, "the message was not stored; send it again", err)
		f.retryAfter = 1
		h.fail(w, v, withRef(f, rec.UserMessage.MessageID))
		return
	}
	switch res.Outcome {
	case txinbox.Processed:
		writeReceipt(w, rec.Receipt)
	case txinbox.Duplicate:
		h.replay(r.Context(), w, rec, v)
	case txinbox.Drift:
		h.fail(w, v, withRef(senderFailure(ValueInconsistent, "this MessageId was received before with other content (header or payloads) from the same party, or from another party under an agreement with duplicates_across_senders"), rec.UserMessage.MessageID))
	case txinbox.DeadLettered:
		h.fail(w, v, withRef(receiverFailure(http.StatusInternalServerError, "the message failed too often and was dead-lettered; an operator must act", res.Err), rec.UserMessage.MessageID))
	default: // Retry
		f := receiverFailure(http.StatusServiceUnavailable, "the message was not stored; send it again", res.Err)
		f.retryAfter = int(math.Ceil(res.RetryAfter.Seconds()))
		h.fail(w, v, withRef(f, rec.UserMessage.MessageID))
	}
}

// replay answers a duplicate with the receipt stored with the original:
// byte for byte if the duplicate has the original's SOAP version, else the
// same receipt (MessageId, Timestamp, content) in the duplicate's version.
func (h *Handler[TTx]) replay(ctx context.Context, w http.ResponseWriter, rec *Received, v soapVersion) {
	stored, err := h.cfg.Store.Receipt(ctx, rec.Scope, rec.Key)
	switch {
	case errors.Is(err, ErrNotFound):
		// The inbox has the key but the AS4 tables do not (another writer
		// in the same scope, or a manual deletion): the message was
		// accepted, so a fresh receipt is true.
		h.log.Warn("as4: duplicate without a stored receipt; sending a new one", "key", rec.Key)
		writeReceipt(w, rec.Receipt)
	case err != nil:
		h.fail(w, soapOf(rec.SOAPVersion), withRef(receiverFailure(http.StatusServiceUnavailable, "reading the original receipt failed; send the message again", err), rec.UserMessage.MessageID))
	case soapOfContentType(stored.ContentType) != v:
		id, ref, at, content, ok := storedReceiptParts(stored.Body)
		if !ok {
			h.log.Warn("as4: duplicate in another SOAP version; the stored receipt cannot be rewritten, so it is sent as stored", "key", rec.Key)
			writeReceipt(w, stored)
			return
		}
		rc, err := h.receipt(v, id, ref, at, content)
		if err != nil {
			h.fail(w, v, withRef(receiverFailure(http.StatusInternalServerError, "signing the receipt failed", err), rec.UserMessage.MessageID))
			return
		}
		writeReceipt(w, rc)
	default:
		writeReceipt(w, stored)
	}
}

// receipt returns the receipt with MessageId id for the user message ref,
// whose eb:Receipt holds content: the one place where the bytes of a
// receipt are made. A non-repudiation receipt (content is
// ebbp:NonRepudiationInformation, which with a Security.Verifier holds
// only verified references) is signed when a Security.Signer is set; the
// signature's ids derive from the envelope, so the same receipt signed
// again gives the same bytes.
func (h *Handler[TTx]) receipt(v soapVersion, id, ref string, at time.Time, content []byte) (StoredReceipt, error) {
	body := receiptWithContent(v, id, ref, at, content)
	sec := h.cfg.Security
	if sec.Signer != nil && sec.Verifier != nil && bytes.HasPrefix(content, []byte("<ebbp:NonRepudiationInformation")) {
		signed, err := sec.Signer.Sign(body, nil)
		if err != nil {
			return StoredReceipt{}, fmt.Errorf("as4: signing the receipt: %w", err)
		}
		body = signed
	}
	return StoredReceipt{MessageID: id, ContentType: v.contentType, Body: body}, nil
}

func (h *Handler[TTx]) newReceived(req *request) (*Received, *failure) {
	now := h.cfg.Inbox.Now()
	rec := &Received{
		Scope: h.cfg.Inbox.Scope, Key: inboxKey(req.agreement, req.msg), SOAPVersion: req.msg.SOAPVersion,
		UserMessage: req.user, Parts: req.parts, ReceivedAt: now,
	}
	rec.Fingerprint = fingerprint(&rec.UserMessage, rec.Parts)
	var content xmlWriter
	refs := req.signatureRefs
	if h.cfg.Security.Verifier != nil {
		// Only what the verifier checked goes into a receipt it signs.
		refs = verifiedRefs(req.security)
	}
	if req.agreement != nil {
		rec.Agreement = req.agreement.Name
		if req.agreement.Receipt == ReceiptPlain {
			refs = nil
		}
	}
	nrr, err := nrrOf(refs)
	if err != nil {
		return nil, withRef(senderFailure(InvalidHeader, "wsse:Security: "+err.Error()), rec.UserMessage.MessageID)
	}
	receiptContent(&content, &rec.UserMessage, nrr)
	if rec.Receipt, err = h.receipt(soapOf(rec.SOAPVersion), h.cfg.NewMessageID(), rec.UserMessage.MessageID, now, []byte(content.b.String())); err != nil {
		return nil, withRef(receiverFailure(http.StatusInternalServerError, "signing the receipt failed", err), rec.UserMessage.MessageID)
	}
	return rec, nil
}

// nrrOf returns the ebbp:NonRepudiationInformation for a signed request's
// references, nil for an unsigned request.
func nrrOf(refs [][]byte) ([]byte, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	return NonRepudiationInformation(refs)
}

func writeReceipt(w http.ResponseWriter, rc StoredReceipt) {
	w.Header().Set("Content-Type", rc.ContentType)
	w.WriteHeader(http.StatusOK)
	w.Write(rc.Body) //nolint:errcheck // the client may be gone; nothing to do
}

// signal answers a signal message: receipts and errors are taken note of
// (this endpoint sends no user messages to correlate them with); a pull
// request is told that there is nothing to pull.
func (h *Handler[TTx]) signal(w http.ResponseWriter, v soapVersion, s *signalRequest) {
	switch s.sig.Signal {
	case "Receipt", "Error":
		h.log.Info("as4: signal received", "signal", s.sig.Signal, "message_id", s.sig.MessageID,
			"ref_to_message_id", s.sig.RefToMessageID, "error_codes", s.sig.ErrorCodes)
		w.WriteHeader(http.StatusOK)
	case "PullRequest":
		h.fail(w, v, &failure{Code: EmptyMessagePartitionChannel, Status: http.StatusOK, Warning: true,
			RefToMessageID: s.sig.MessageID, Detail: "this endpoint has no messages to be pulled"})
	default:
		h.fail(w, v, withRef(senderFailure(InvalidHeader, "eb:SignalMessage has neither eb:Receipt, eb:Error nor eb:PullRequest"), s.sig.MessageID))
	}
}

// fail answers with an ebMS error signal.
func (h *Handler[TTx]) fail(w http.ResponseWriter, v soapVersion, f *failure) {
	level := slog.LevelInfo
	if f.Status >= 500 {
		level = slog.LevelWarn
	}
	attrs := []any{"code", string(f.Code), "status", f.Status, "ref_to_message_id", f.RefToMessageID, "detail", f.Detail}
	if f.err != nil { // most failures have no underlying error: no err=<nil>
		attrs = append(attrs, "err", f.err)
	}
	h.log.Log(context.Background(), level, "as4: ebMS error answered", attrs...)
	body := errorEnvelope(v, h.cfg.NewMessageID(), h.cfg.Inbox.Now(), f)
	if f.retryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(f.retryAfter))
	}
	w.Header().Set("Content-Type", v.contentType)
	w.WriteHeader(f.Status)
	w.Write(body) //nolint:errcheck // the client may be gone; nothing to do
}
