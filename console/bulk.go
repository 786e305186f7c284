package console

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/txinbox/txinbox/store"
)

// bulkTally counts the outcomes of a filtered replay or drop.
type bulkTally struct {
	done, refused, failed int
	firstProblem          string
	capped                bool
}

func (t *bulkTally) add(msg string, code int) {
	switch {
	case code == http.StatusOK:
		t.done++
		return
	case code >= 500:
		t.failed++
	default:
		t.refused++
	}
	if t.firstProblem == "" {
		t.firstProblem = msg
	}
}

// deadLettersBulk replays or drops every dead letter the posted filter
// matches, up to Config.BulkLimit, one audited action each: the same rules
// as for one (a stale dead letter is refused, not replayed).
func (c *console) deadLettersBulk(w http.ResponseWriter, r *http.Request, actor string) {
	form := readListForm(r.PostForm)
	back := c.cfg.Prefix + "dead-letters?" + form.values().Encode()
	action := r.PostForm.Get("action")
	lf, err := form.filter()
	a := store.AuditEntry{Actor: actor, Reason: strings.TrimSpace(r.PostForm.Get("reason"))}
	switch {
	case err != nil:
		c.showResult(w, r, http.StatusBadRequest, result{Message: err.Error(), Back: back})
		return
	case action != "replay" && action != "drop":
		c.showResult(w, r, http.StatusBadRequest, result{Message: fmt.Sprintf("unknown action %q: use replay or drop", action), Back: back})
		return
	case a.Reason == "":
		c.showResult(w, r, http.StatusBadRequest, result{Message: "a reason is required: it is kept in the audit table", Back: back})
		return
	}
	t, err := c.bulk(r, lf, action, a)
	if err != nil {
		c.failed(w, r, "listing the dead letters to "+action, err)
		return
	}
	msg := fmt.Sprintf("%s: %d done, %d refused, %d failed", action, t.done, t.refused, t.failed)
	if t.firstProblem != "" {
		msg += "; first problem: " + t.firstProblem
	}
	if t.capped {
		msg += fmt.Sprintf("; stopped after %d dead letters (the bulk limit): more match, run it again", c.cfg.BulkLimit)
	}
	c.cfg.Logger.Info("console: bulk dead letter action", "action", action, "actor", actor, "reason", a.Reason,
		"filter", back, "done", t.done, "refused", t.refused, "failed", t.failed)
	code := http.StatusOK
	if t.failed > 0 {
		code = http.StatusInternalServerError
	}
	c.showResult(w, r, code, result{OK: t.failed == 0 && t.refused == 0, Message: msg, Back: back})
}

// bulk walks the matching dead letters page by page (by id, so replayed
// ones leaving the table do not shift the pages) and acts on each.
func (c *console) bulk(r *http.Request, lf store.ListFilter, action string, a store.AuditEntry) (bulkTally, error) {
	var t bulkTally
	seen := 0
	lf.Limit = min(200, c.cfg.BulkLimit)
	lf.OmitPayload = true // the actions need the key, not the payload
	for {
		rows, err := c.cfg.Admin.ListDeadLetters(r.Context(), lf)
		if err != nil {
			return t, err
		}
		for _, rec := range rows {
			if seen == c.cfg.BulkLimit {
				t.capped = true
				return t, nil
			}
			seen++
			t.add(c.act(r, action, rec.ID, &rec, a))
		}
		if len(rows) < lf.Limit {
			return t, nil
		}
		lf.Before = rows[len(rows)-1].ID
	}
}
