package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/txinbox/txinbox/store"
)

const pageSize = 50

// listForm is the dead-letter listing's filter as the form holds it.
type listForm struct {
	Scope, Source, Reason, Since, Until string
	Dropped                             bool
}

// filter reads the filter fields of q into a ListFilter; errors name the
// field.
func (f listForm) filter() (store.ListFilter, error) {
	lf := store.ListFilter{Scope: f.Scope, Source: f.Source, Reason: f.Reason, Dropped: f.Dropped, OmitPayload: true}
	var err error
	if lf.Since, err = parseTime("since", f.Since); err != nil {
		return lf, err
	}
	lf.Until, err = parseTime("until", f.Until)
	return lf, err
}

func readListForm(v url.Values) listForm {
	return listForm{Scope: v.Get("scope"), Source: v.Get("source"), Reason: v.Get("reason_filter"),
		Since: v.Get("since"), Until: v.Get("until"), Dropped: v.Get("dropped") == "on"}
}

func (f listForm) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"scope": f.Scope, "source": f.Source, "reason_filter": f.Reason, "since": f.Since, "until": f.Until} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if f.Dropped {
		v.Set("dropped", "on")
	}
	return v
}

// parseTime accepts an RFC 3339 time or a browser's datetime-local value
// (taken as UTC); "" is no bound.
func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%s %q: use a time like 2026-12-01T15:04 (UTC) or RFC 3339", field, s)
}

type deadLettersData struct {
	Form     listForm
	Rows     []store.DeadLetterRecord
	NextURL  string
	FirstURL string
	Error    string
	Hidden   map[string]string // the filter, for the bulk form
}

func (c *console) deadLetters(w http.ResponseWriter, r *http.Request) {
	form := readListForm(r.URL.Query())
	d := deadLettersData{Form: form, Hidden: map[string]string{}}
	for k, v := range form.values() {
		d.Hidden[k] = v[0]
	}
	lf, err := form.filter()
	if err == nil {
		lf.Before, err = parseID("before", r.URL.Query().Get("before"), true)
	}
	if err != nil {
		d.Error = err.Error()
		c.renderStatus(w, r, http.StatusBadRequest, "deadletters", "Dead letters", d)
		return
	}
	lf.Limit = pageSize
	if d.Rows, err = c.cfg.Admin.ListDeadLetters(r.Context(), lf); err != nil {
		c.failed(w, r, "listing the dead letters", err)
		return
	}
	base := c.cfg.Prefix + "dead-letters?"
	if lf.Before != 0 {
		d.FirstURL = base + form.values().Encode()
	}
	if len(d.Rows) == pageSize {
		v := form.values()
		v.Set("before", strconv.FormatInt(d.Rows[len(d.Rows)-1].ID, 10))
		d.NextURL = base + v.Encode()
	}
	c.render(w, r, "deadletters", "Dead letters", d)
}

// parseID reads a positive id; "" is 0 when optional.
func parseID(field, s string, optional bool) (int64, error) {
	if s == "" && optional {
		return 0, nil
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%s %q: not a positive id", field, s)
	}
	return id, nil
}

type deadLetterData struct {
	DL      store.DeadLetterRecord
	Payload payloadView
	Headers []header
	State   string
}

func (c *console) deadLetter(w http.ResponseWriter, r *http.Request) {
	id, err := parseID("dead letter id", r.PathValue("id"), false)
	if err != nil {
		c.showResult(w, r, http.StatusBadRequest, result{Message: err.Error(), Back: c.cfg.Prefix + "dead-letters"})
		return
	}
	rec, ok, err := c.cfg.Admin.GetDeadLetter(r.Context(), id)
	switch {
	case err != nil:
		c.failed(w, r, "reading the dead letter", err)
		return
	case !ok:
		c.showResult(w, r, http.StatusNotFound, result{Message: fmt.Sprintf("no dead letter %d (replayed, or never stored)", id),
			Back: c.cfg.Prefix + "dead-letters"})
		return
	}
	d := deadLetterData{DL: rec, Payload: viewPayload(rec.Payload, c.cfg.EDI), Headers: parseHeaders(rec.HeadersJSON), State: "dead"}
	if !rec.DroppedAt.IsZero() {
		d.State = "dropped"
	}
	c.render(w, r, "deadletter", fmt.Sprintf("Dead letter %d", id), d)
}

// deadLetterAction replays or drops one dead letter.
func (c *console) deadLetterAction(w http.ResponseWriter, r *http.Request, actor string) {
	back := c.cfg.Prefix + "dead-letters"
	id, err := parseID("dead letter id", r.PathValue("id"), false)
	if err != nil {
		c.showResult(w, r, http.StatusBadRequest, result{Message: err.Error(), Back: back})
		return
	}
	a := store.AuditEntry{Actor: actor, Reason: strings.TrimSpace(r.PostForm.Get("reason"))}
	msg, code := c.act(r, r.PathValue("action"), id, nil, a)
	c.cfg.Logger.Info("console: dead letter action", "action", r.PathValue("action"), "id", id, "actor", actor,
		"reason", a.Reason, "status", code, "result", msg)
	c.showResult(w, r, code, result{OK: code == http.StatusOK, Message: msg, Back: back})
}

// act runs one replay or drop of dead letter id and says what happened,
// with the HTTP status of the answer. listed, when set, is that dead letter
// as a bulk action just listed it: it is not read again.
func (c *console) act(r *http.Request, action string, id int64, listed *store.DeadLetterRecord, a store.AuditEntry) (string, int) {
	if a.Reason == "" {
		return "a reason is required: it is kept in the audit table", http.StatusBadRequest
	}
	var stale *store.StaleDeadLetterError
	switch action {
	case "replay":
		rec, err := c.replay(r, id, listed, a)
		switch {
		case errors.As(err, &stale), errors.Is(err, store.ErrReplayNoID):
			return err.Error(), http.StatusConflict
		case errors.Is(err, store.ErrNoDeadLetter):
			return err.Error(), http.StatusNotFound
		case err != nil:
			return "replay failed: " + err.Error(), http.StatusInternalServerError
		}
		return fmt.Sprintf("dead letter %d replayable: the next delivery of %q (scope %q) will be processed; "+
			"re-publish its payload if the broker will not redeliver it", id, rec.MessageID, rec.Scope), http.StatusOK
	case "drop":
		already, err := c.drop(r, id, listed, a)
		switch {
		case errors.Is(err, store.ErrNoDeadLetter):
			return err.Error(), http.StatusNotFound
		case err != nil:
			return "drop failed: " + err.Error(), http.StatusInternalServerError
		case already:
			return fmt.Sprintf("dead letter %d was already dropped", id), http.StatusOK
		}
		return fmt.Sprintf("dead letter %d dropped: hidden from the list; redeliveries of its message stay refused", id), http.StatusOK
	}
	return fmt.Sprintf("unknown action %q: use replay or drop", action), http.StatusNotFound
}

// replay replays dead letter id (store.ReplayDeadLetter), or listed
// without reading it again (store.ReplayListed).
func (c *console) replay(r *http.Request, id int64, listed *store.DeadLetterRecord, a store.AuditEntry) (store.DeadLetterRecord, error) {
	if listed == nil {
		return store.ReplayDeadLetter(r.Context(), c.cfg.Admin, id, a)
	}
	return *listed, store.ReplayListed(r.Context(), c.cfg.Admin, *listed, a)
}

// drop drops dead letter id (store.DropDeadLetterAudited), or, listed, at
// once: the listing said it exists.
func (c *console) drop(r *http.Request, id int64, listed *store.DeadLetterRecord, a store.AuditEntry) (already bool, err error) {
	if listed == nil {
		return store.DropDeadLetterAudited(r.Context(), c.cfg.Admin, id, a)
	}
	if err := store.ValidateAudit(a); err != nil {
		return false, err
	}
	dropped, err := c.cfg.Admin.DropDeadLetter(r.Context(), id, a)
	return !dropped && err == nil, err
}
