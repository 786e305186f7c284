package txinbox_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/testkit/sqlitetest"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// logRecorder is a slog.Handler that keeps the records at Warn and above,
// their attributes flattened to "group.key" strings.
type logRecorder struct {
	mu      sync.Mutex
	records []loggedRecord
}

type loggedRecord struct {
	msg   string
	attrs map[string]string
}

func (h *logRecorder) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *logRecorder) WithGroup(string) slog.Handler                { return h }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	rec := loggedRecord{msg: r.Message, attrs: map[string]string{}}
	var add func(prefix string, a slog.Attr)
	add = func(prefix string, a slog.Attr) {
		if a.Value.Kind() == slog.KindGroup {
			for _, g := range a.Value.Group() {
				add(prefix+a.Key+".", g)
			}
			return
		}
		rec.attrs[prefix+a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { add("", a); return true })
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, rec)
	return nil
}

// with returns the records whose message is msg.
func (h *logRecorder) with(msg string) []loggedRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []loggedRecord
	for _, r := range h.records {
		if r.msg == msg {
			out = append(out, r)
		}
	}
	return out
}

const (
	attemptFailed  = "txinbox: attempt failed, will be retried"
	attemptsHidden = "txinbox: more failed attempts not logged"
)

// TestFailedAttemptsLogged: a message that fails twice, then succeeds,
// leaves two Warn lines with its scope, id, attempt number, error and
// source, whichever way it was processed (Process, Submit, ProcessOffsets).
func TestFailedAttemptsLogged(t *testing.T) {
	ways := map[string]func(*txinbox.Processor[*sql.Tx], *txinbox.Message, int64) (txinbox.Result, error){
		"Process": func(p *txinbox.Processor[*sql.Tx], m *txinbox.Message, _ int64) (txinbox.Result, error) {
			res, err := p.Process(context.Background(), []*txinbox.Message{m})
			return res[0], err
		},
		"Submit": func(p *txinbox.Processor[*sql.Tx], m *txinbox.Message, _ int64) (txinbox.Result, error) {
			return p.Submit(context.Background(), m)
		},
		"ProcessOffsets": func(p *txinbox.Processor[*sql.Tx], m *txinbox.Message, saved int64) (txinbox.Result, error) {
			res, _, err := p.ProcessOffsets(context.Background(), []*txinbox.Message{m}, txinbox.OffsetCheckpoint{
				Checkpoint: txinbox.Checkpoint{Source: "orders", Partition: 3, Positions: []int64{1042}}, Saved: saved})
			return res[0], err
		},
	}
	for name, process := range ways {
		t.Run(name, func(t *testing.T) {
			logs := &logRecorder{}
			failures := 0
			p, err := txinbox.NewProcessor(sqlitetest.Open(t), txinbox.Config[*sql.Tx]{Scope: "billing", Logger: slog.New(logs),
				Handler: func(context.Context, *sql.Tx, *txinbox.Message) error {
					if failures < 2 {
						failures++
						return errors.New("partner down")
					}
					return nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			want := []txinbox.Outcome{txinbox.Retry, txinbox.Retry, txinbox.Processed}
			for i, w := range want {
				m := &txinbox.Message{ID: "inv-7", Source: "orders", SourcePosition: "3:1042", Payload: []byte("x")}
				if res, err := process(p, m, -1); err != nil || res.Outcome != w {
					t.Fatalf("delivery %d: %v, %v; want %v", i+1, res.Outcome, err, w)
				}
			}
			lines := logs.with(attemptFailed)
			if len(lines) != 2 || len(logs.records) != 2 {
				t.Fatalf("logged %+v; want 2 lines %q", logs.records, attemptFailed)
			}
			for i, l := range lines {
				a := l.attrs
				if a["scope"] != "billing" || a["message_id"] != "inv-7" || a["attempt"] != []string{"1", "2"}[i] ||
					a["err"] != "partner down" || a["source"] != "orders" || a["source_position"] != "3:1042" {
					t.Errorf("line %d: %v", i+1, a)
				}
			}
		})
	}
}

// TestFailedAttemptsLogLimited: a poison message failing 10,000 times
// (1,000 under the race detector) within 200s logs at most 10 lines a minute, and one line a minute that
// counts the others; the count of the last minute is logged with the next
// failure after it. Every attempt is either logged or counted.
func TestFailedAttemptsLogLimited(t *testing.T) {
	logs := &logRecorder{}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	// No fsync per commit: 30,000 transactions stay quick.
	d, err := sqlitestore.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlitestore.Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	p, err := txinbox.NewProcessor(d, txinbox.Config[*sql.Tx]{Scope: "billing", Logger: slog.New(logs),
		MaxAttempts: 1 << 20, Now: func() time.Time { return now },
		Handler: func(context.Context, *sql.Tx, *txinbox.Message) error { return errors.New("unparsable") }})
	if err != nil {
		t.Fatal(err)
	}
	n := 10_000
	if raceEnabled {
		n = 1_000 // the same 200s, the same windows
	}
	step := 200 * time.Second / time.Duration(n)
	poison := []*txinbox.Message{{ID: "poison", Payload: []byte("x")}}
	for i := range n + 1 {
		now = start.Add(time.Duration(i) * step)
		if i == n {
			now = now.Add(time.Hour) // the count of the last minute is owed
		}
		if res, err := p.Process(context.Background(), poison); err != nil || res[0].Outcome != txinbox.Retry {
			t.Fatalf("delivery %d: %v, %v", i+1, res[0].Outcome, err)
		}
	}
	lines, hidden := logs.with(attemptFailed), logs.with(attemptsHidden)
	// Windows begin at 0s, 60s, 120s, 180s (10 lines each) and at the
	// last failure; a summary begins each window after the first.
	if len(lines) != 41 || len(hidden) != 4 || len(logs.records) != 45 {
		t.Fatalf("logged %d attempt lines and %d summaries (%d records); want 41 and 4", len(lines), len(hidden), len(logs.records))
	}
	counted := len(lines)
	for _, h := range hidden {
		k, err := strconv.Atoi(h.attrs["not_logged"])
		if err != nil || k <= 0 || h.attrs["scope"] != "billing" {
			t.Errorf("summary %v", h.attrs)
		}
		counted += k
	}
	if counted != n+1 {
		t.Errorf("logged or counted %d attempts of %d", counted, n+1)
	}
	if last := lines[9].attrs; last["log_limit.next_logged_after"] == "" || !strings.HasPrefix(last["log_limit.window"], "1m") {
		t.Errorf("the 10th line of a minute does not say that the next are left out: %v", last)
	}
}
