package console

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/txinbox/txinbox/httpinbox"
	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/store"
)

type driftData struct {
	Scope, Source string
	Rows          []store.DriftRecord
	NextURL       string
	Error         string
}

func (c *console) drift(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := driftData{Scope: q.Get("scope"), Source: q.Get("source")}
	before, err := parseID("before", q.Get("before"), true)
	if err != nil {
		d.Error = err.Error()
		c.renderStatus(w, r, http.StatusBadRequest, "drift", "Drift", d)
		return
	}
	lf := store.ListFilter{Scope: d.Scope, Source: d.Source, Before: before, Limit: pageSize}
	if d.Rows, err = c.cfg.Admin.ListDrift(r.Context(), lf); err != nil {
		c.failed(w, r, "listing the drift records", err)
		return
	}
	if len(d.Rows) == pageSize {
		q.Set("before", strconv.FormatInt(d.Rows[len(d.Rows)-1].ID, 10))
		d.NextURL = c.cfg.Prefix + "drift?" + q.Encode()
	}
	c.render(w, r, "drift", "Drift", d)
}

type inspectData struct {
	Scope, ID string
	Asked     bool
	In        store.Inspection
	State     string
	Payload   *payloadView // the dead letter's, when one is stored
	// Answer is the HTTP answer stored in the inbox row (httpinbox), nil
	// when none.
	Answer *httpinbox.StoredResponse
}

func (c *console) inspect(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := inspectData{Scope: q.Get("scope"), ID: q.Get("id")}
	if d.Scope != "" && d.ID != "" {
		in, err := c.cfg.Admin.Inspect(r.Context(), store.Key{Scope: d.Scope, MessageID: d.ID})
		if err != nil {
			c.failed(w, r, "inspecting the key", err)
			return
		}
		d.Asked, d.In, d.State = true, in, stateOf(in)
		if in.DeadLetter != nil {
			v := viewPayload(in.DeadLetter.Payload, c.cfg.EDI)
			d.Payload = &v
		}
		if in.Inbox != nil {
			if rs, err := httpinbox.ParseStoredResponse(in.Inbox.Reply); err == nil {
				d.Answer = &rs
			}
		}
	}
	c.render(w, r, "inspect", "Inspect a key", d)
}

// stateOf says in words what the inbox holds for a key, as txinbox
// inspect does.
func stateOf(in store.Inspection) string {
	state := "unknown: never processed, or purged"
	if in.Inbox != nil {
		state = "processed"
	}
	if in.Attempts != nil && in.Inbox == nil {
		state = "failing: will be retried"
	}
	if in.DeadLetter != nil {
		state = "dead-lettered"
		if in.Inbox != nil {
			state = "processed (stale dead letter: drop it)"
		}
	}
	return state
}

type outboxData struct {
	Stats outbox.Stats
	Rows  []outbox.FailedRow
}

func (c *console) outbox(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Outbox == nil {
		c.showResult(w, r, http.StatusNotFound, result{Message: "no outbox is configured", Back: c.cfg.Prefix})
		return
	}
	var d outboxData
	var err error
	if d.Stats, err = c.cfg.Outbox.Stats(r.Context()); err == nil {
		d.Rows, err = c.cfg.Outbox.ListFailed(r.Context(), 200)
	}
	if err != nil {
		c.failed(w, r, "reading the outbox", err)
		return
	}
	c.render(w, r, "outbox", "Outbox", d)
}

// outboxReplay puts a failed outbox row back in the queue. The outbox
// keeps no audit table: the action is logged with its actor and reason.
func (c *console) outboxReplay(w http.ResponseWriter, r *http.Request, actor string) {
	back := c.cfg.Prefix + "outbox"
	id, err := parseID("outbox row id", r.PathValue("id"), false)
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	switch {
	case c.cfg.Outbox == nil:
		c.showResult(w, r, http.StatusNotFound, result{Message: "no outbox is configured", Back: c.cfg.Prefix})
		return
	case err != nil:
		c.showResult(w, r, http.StatusBadRequest, result{Message: err.Error(), Back: back})
		return
	case reason == "":
		c.showResult(w, r, http.StatusBadRequest, result{Message: "a reason is required: it is logged with the action", Back: back})
		return
	}
	ok, err := outbox.ReplayAudited(r.Context(), c.cfg.Outbox, id, store.AuditEntry{Actor: actor, Reason: reason})
	attrs := []any{"id", id, "actor", actor, "reason", reason, "replayed", ok}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	c.cfg.Logger.Info("console: outbox replay (audited)", attrs...)
	switch {
	case err != nil:
		c.failed(w, r, "replaying the outbox row", err)
	case !ok:
		c.showResult(w, r, http.StatusNotFound, result{Message: fmt.Sprintf("no failed outbox row %d", id), Back: back})
	default:
		c.showResult(w, r, http.StatusOK, result{OK: true, Message: fmt.Sprintf("outbox row %d is queued again: the relay sends it next", id), Back: back})
	}
}

type as4Data struct {
	Scope   string
	Rows    []as4Row
	NextURL string
	Error   string
}

// as4Row is a listed message with its receipt as text.
type as4Row struct {
	AS4Message
	ReceiptText string
}

func (c *console) as4(w http.ResponseWriter, r *http.Request) {
	if c.cfg.AS4 == nil {
		c.showResult(w, r, http.StatusNotFound, result{Message: "no AS4 store is configured", Back: c.cfg.Prefix})
		return
	}
	q := r.URL.Query()
	d := as4Data{Scope: q.Get("scope")}
	f := AS4Filter{Scope: d.Scope, Limit: pageSize}
	if b := q.Get("before"); b != "" {
		t, err := time.Parse(time.RFC3339Nano, b)
		if err != nil {
			d.Error = fmt.Sprintf("before %q: not an RFC 3339 time", b)
			c.renderStatus(w, r, http.StatusBadRequest, "as4", "AS4 messages", d)
			return
		}
		f.Before = t
	}
	rows, err := c.cfg.AS4.ListAS4(r.Context(), f)
	if err != nil {
		c.failed(w, r, "listing the AS4 messages", err)
		return
	}
	for _, l := range rows {
		d.Rows = append(d.Rows, as4Row{AS4Message: l, ReceiptText: textOf(l.Receipt.Body, 4<<10)})
	}
	if len(rows) == pageSize {
		q.Set("before", rows[len(rows)-1].ReceivedAt.UTC().Format(time.RFC3339Nano))
		d.NextURL = c.cfg.Prefix + "as4?" + q.Encode()
	}
	c.render(w, r, "as4", "AS4 messages", d)
}
