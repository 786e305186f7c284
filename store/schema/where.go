package schema

import (
	"github.com/txinbox/txinbox/store"

	"strings"
	"time"
)

// Where builds the WHERE clause of an operator listing from fixed column
// names and bound arguments, never from user text: only the conditions
// asked for are written, so the planner sees a plain range on the primary
// key for a page of the newest records.
type Where struct {
	conds []string
	Args  []any
	// Placeholder returns the parameter marker of the n-th argument
	// (1-based): "$n" for PostgreSQL, "?" for SQLite.
	Placeholder func(n int) string
	// Time turns a time argument into what the column holds (SQLite keeps
	// fixed-width text); nil: the time itself.
	Time func(time.Time) any
}

// Add appends "column op ?" with arg.
func (w *Where) Add(column, op string, arg any) {
	if t, ok := arg.(time.Time); ok && w.Time != nil {
		arg = w.Time(t)
	}
	w.Args = append(w.Args, arg)
	w.conds = append(w.conds, column+" "+op+" "+w.Placeholder(len(w.Args)))
}

// AddIf calls Add unless arg is its type's zero value ("", 0, zero time).
func (w *Where) AddIf(column, op string, arg any) {
	switch v := arg.(type) {
	case string:
		if v == "" {
			return
		}
	case int64:
		if v == 0 {
			return
		}
	case time.Time:
		if v.IsZero() {
			return
		}
	}
	w.Add(column, op, arg)
}

// Raw appends a condition without argument.
func (w *Where) Raw(cond string) { w.conds = append(w.conds, cond) }

// String returns the conditions joined by AND; "TRUE" when there are none.
func (w *Where) String() string {
	if len(w.conds) == 0 {
		return "TRUE"
	}
	return strings.Join(w.conds, " AND ")
}

// ListFilter adds the conditions of an operator listing f: timeColumn is
// the column Since and Until bound (dead_lettered_at, detected_at);
// deadLetters adds the Reason and Dropped conditions of the dead letters.
func (w *Where) ListFilter(f store.ListFilter, timeColumn string, deadLetters bool) {
	w.AddIf("id", "<", f.Before)
	w.AddIf("scope", "=", f.Scope)
	w.AddIf("source", "=", f.Source)
	w.AddIf(timeColumn, ">=", f.Since)
	w.AddIf(timeColumn, "<", f.Until)
	if deadLetters {
		w.AddIf("reason", "=", f.Reason)
		if !f.Dropped {
			w.Raw("dropped_at IS NULL")
		}
	}
}
