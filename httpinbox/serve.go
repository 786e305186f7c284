package httpinbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/txinbox/txinbox"
)

// routeHandler is one route's middleware.
type routeHandler[TTx any] struct {
	in    *Inbox[TTx]
	rt    Route[TTx]
	h     http.Handler
	scope string
}

func withBody(r *http.Request, body []byte) *http.Request {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return r
}

// readBody reads the whole body, up to the route's limit, before anything
// is claimed: a slow or huge body holds no transaction.
func (rh *routeHandler[TTx]) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	in, name := rh.in, rh.rt.Name
	if r.ContentLength > rh.rt.MaxBodyBytes {
		in.writeProblem(w, http.StatusRequestEntityTooLarge, probBodyTooLarge,
			fmt.Sprintf("the body's %d bytes pass this route's limit of %d", r.ContentLength, rh.rt.MaxBodyBytes), "", 0)
		in.observe(r.Context(), name, BodyRefused, http.StatusRequestEntityTooLarge)
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rh.rt.MaxBodyBytes))
	if err == nil {
		return body, true
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		in.writeProblem(w, http.StatusRequestEntityTooLarge, probBodyTooLarge,
			fmt.Sprintf("the body passes this route's limit of %d bytes", rh.rt.MaxBodyBytes), "", 0)
		in.observe(r.Context(), name, BodyRefused, http.StatusRequestEntityTooLarge)
		return nil, false
	}
	in.writeProblem(w, http.StatusBadRequest, probBadBody, "the body could not be read whole: "+err.Error(), "", 0)
	in.observe(r.Context(), name, BodyRefused, http.StatusBadRequest)
	return nil, false
}

// ServeHTTP reads the body and the key, then runs the request through the
// inbox and answers what became of it.
func (rh *routeHandler[TTx]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in, name := rh.in, rh.rt.Name
	body, ok := rh.readBody(w, r)
	if !ok {
		return
	}
	key, err := rh.rt.Key.extract(r, body)
	if err == nil && len(key) > rh.rt.MaxKeyBytes {
		err = keyErr("the key's %d bytes pass the limit of %d", len(key), rh.rt.MaxKeyBytes)
	}
	switch {
	case err != nil:
		reason := err.Error()
		if ke := (*KeyError)(nil); errors.As(err, &ke) {
			reason = ke.Reason
		}
		in.writeProblem(w, http.StatusBadRequest, probInvalidKey, reason, "", 0)
		in.observe(r.Context(), name, InvalidKey, http.StatusBadRequest)
		return
	case key == "" && rh.rt.Optional && rh.h != nil:
		rh.h.ServeHTTP(w, withBody(r, body))
		return
	case key == "":
		in.writeProblem(w, http.StatusBadRequest, probMissingKey,
			"this route requires an idempotency key in "+rh.rt.Key.String()+": see the link in type", "", 0)
		in.observe(r.Context(), name, MissingKey, http.StatusBadRequest)
		return
	}
	identity := ""
	if rh.rt.Identity != nil {
		if identity, err = rh.rt.Identity(r); err != nil {
			in.writeProblem(w, http.StatusUnauthorized, probIdentity, err.Error(), "", 0)
			in.observe(r.Context(), name, Unidentified, http.StatusUnauthorized)
			return
		}
	}
	msg := &txinbox.Message{
		Scope: rh.scope, ID: messageID(identity, key), Source: "http:" + name,
		SourcePosition: r.Method + " " + r.URL.RequestURI(), Payload: body,
		Headers: messageHeaders(r.Header), Fingerprint: rh.rt.fingerprint(r, body),
	}
	rh.submit(w, r, msg, key, body)
}

// submit runs msg through the processor, unless this process runs the
// same key already (409 at once).
func (rh *routeHandler[TTx]) submit(w http.ResponseWriter, r *http.Request, msg *txinbox.Message, key string, body []byte) {
	in := rh.in
	local := msg.Scope + "\x00" + msg.ID
	if _, busy := in.inFlight.LoadOrStore(local, struct{}{}); busy {
		rh.inFlight(w, r, key)
		return
	}
	defer in.inFlight.Delete(local)
	c := &call[TTx]{rh: rh, req: r, body: body}
	res, err := in.proc.Submit(context.WithValue(r.Context(), callKey{}, c), msg)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client went away; its retry will tell
		}
		in.writeProblem(w, http.StatusServiceUnavailable, probUnavailable,
			"the inbox's database failed; the request may or may not have been processed: retry with the same key", key, 1)
		in.observe(r.Context(), rh.rt.Name, Unavailable, http.StatusServiceUnavailable)
		return
	}
	rh.answer(w, r, c, res, key)
}

func (rh *routeHandler[TTx]) inFlight(w http.ResponseWriter, r *http.Request, key string) {
	rh.in.writeProblem(w, http.StatusConflict, probInFlight,
		"a request with this key is being processed; retry after it ends to get its answer", key, 1)
	rh.in.observe(r.Context(), rh.rt.Name, Conflict, http.StatusConflict)
}

// answer writes what the outcome calls for.
func (rh *routeHandler[TTx]) answer(w http.ResponseWriter, r *http.Request, c *call[TTx], res txinbox.Result, key string) {
	in, name, ctx := rh.in, rh.rt.Name, r.Context()
	switch res.Outcome {
	case txinbox.Processed:
		c.rec.reply().write(w, false)
		in.observe(ctx, name, Processed, c.rec.status())
	case txinbox.Duplicate:
		rp, err := decodeReply(res.Reply)
		if err != nil {
			in.writeProblem(w, http.StatusConflict, probInFlight, "this key was processed, but its answer is not stored (it predates the stored answers)", key, 0)
			in.observe(ctx, name, Conflict, http.StatusConflict)
			return
		}
		rp.write(w, true)
		in.observe(ctx, name, Replayed, rp.status)
	case txinbox.Drift:
		in.writeProblem(w, http.StatusUnprocessableEntity, probMismatch,
			"this key was used with another request (method, path, query, body or fingerprinted headers): use a new key for a new request", key, 0)
		in.observe(ctx, name, Mismatch, http.StatusUnprocessableEntity)
	case txinbox.InFlight:
		rh.inFlight(w, r, key)
	case txinbox.DeadLettered:
		rh.deadLettered(w, r, c, res, key)
	default: // Retry
		rh.failed(w, r, c, res, key)
	}
}

// failed answers a failed attempt: the handler's own answer when it gave
// one that was not kept (a 5xx, 429), else a 500 problem.
func (rh *routeHandler[TTx]) failed(w http.ResponseWriter, r *http.Request, c *call[TTx], res txinbox.Result, key string) {
	var se *statusError
	if c.ran && c.rec != nil && errors.As(res.Err, &se) {
		c.rec.reply().write(w, false)
		rh.in.observe(r.Context(), rh.rt.Name, Failed, se.status)
		return
	}
	detail := "the request failed and nothing was stored: retry with the same key"
	if errors.Is(res.Err, ErrReplyTooLarge) {
		detail = fmt.Sprintf("the response passed this route's limit of %d bytes, so it could not be stored; nothing was committed", rh.rt.MaxReplyBytes)
	}
	rh.in.writeProblem(w, http.StatusInternalServerError, probFailed, detail, key, 0)
	rh.in.observe(r.Context(), rh.rt.Name, Failed, http.StatusInternalServerError)
}

// deadLettered answers a key given up: this attempt's failure when it was
// the last, else 422 (see docs/http.md, "dead-lettered").
func (rh *routeHandler[TTx]) deadLettered(w http.ResponseWriter, r *http.Request, c *call[TTx], res txinbox.Result, key string) {
	if c.ran {
		rh.failed(w, r, c, res, key)
		return
	}
	rh.in.writeProblem(w, http.StatusUnprocessableEntity, probDeadLettered,
		"requests with this key failed too many times and it was given up; it stays refused until an operator replays it. Do not retry it", key, 0)
	rh.in.observe(r.Context(), rh.rt.Name, DeadLettered, http.StatusUnprocessableEntity)
}
