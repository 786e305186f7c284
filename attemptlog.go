package txinbox

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// attemptLogLines and attemptLogWindow bound the log lines of failed
// attempts (Config.Logger): per scope, at most attemptLogLines lines in
// each attemptLogWindow, so that a poison message or an outage that fails
// every message cannot flood the log. The attempts left out are counted
// and the count is logged, as one line, with the scope's first failed
// attempt after the window ended: a summary is owed, not lost, though it
// waits for that attempt (no timer runs behind a Processor).
const (
	attemptLogLines  = 10
	attemptLogWindow = time.Minute
)

// logFailedAttempt logs, at Warn, a failed attempt of a message left for
// a retry, within the limit of its scope. attempt is the count recorded,
// 0 when recording it failed.
func (p *Processor[TTx]) logFailedAttempt(ctx context.Context, it *item, attempt int) {
	d := p.attemptLog.Allow(it.row.Scope, p.cfg.Now())
	if d.Dropped > 0 {
		p.cfg.Logger.WarnContext(ctx, "txinbox: more failed attempts not logged", "scope", it.row.Scope,
			"not_logged", d.Dropped, "since", d.DroppedSince, "window", attemptLogWindow)
	}
	if !d.Log {
		return
	}
	attrs := []any{"scope", it.row.Scope, "message_id", it.row.MessageID, "attempt", attempt, "err", it.res.Err}
	m := it.msg
	if m.Source != "" {
		attrs = append(attrs, "source", m.Source)
	}
	if m.SourcePosition != "" {
		attrs = append(attrs, "source_position", m.SourcePosition)
	}
	if m.PartitionKey != "" {
		attrs = append(attrs, "partition_key", m.PartitionKey)
	}
	if attempt == 0 {
		attrs = append(attrs, "counted", false) // RecordFailures failed: logged at Error
	}
	if d.Last {
		attrs = append(attrs, slog.Group("log_limit", "lines", attemptLogLines, "window", attemptLogWindow, "next_logged_after", d.Until))
	}
	p.cfg.Logger.WarnContext(ctx, "txinbox: attempt failed, will be retried", attrs...)
}

// limiterMaxKeys bounds the keys (scopes) a logLimiter tracks; keys past
// it share one window, limiterOverflowKey's.
const (
	limiterMaxKeys     = 1024
	limiterOverflowKey = "\x00overflow"
)

// logLimiter bounds the log lines of an event that can repeat without end
// (a poison message failing at every redelivery, every message failing
// through a broker or database outage) with a fixed window per key: the
// first max events of a key in a window are logged, the rest counted, and
// the count is reported with the first event of the key after the window
// ended. It is safe for concurrent use.
type logLimiter struct {
	max    int
	window time.Duration

	mu   sync.Mutex
	keys map[string]*logWindow
}

// logWindow is one key's current window.
type logWindow struct {
	start   time.Time
	logged  int
	dropped int
}

// newLogLimiter returns a logLimiter of at most lines lines per key in
// each window of length per.
func newLogLimiter(lines int, per time.Duration) *logLimiter {
	return &logLimiter{max: lines, window: per, keys: map[string]*logWindow{}}
}

// logDecision says what to log for one event.
type logDecision struct {
	// Log is true if the event is logged.
	Log bool
	// Last is true if the event is the last one logged in its window:
	// the line may say that the next ones are left out until Until.
	Last bool
	// Until is when the event's window ends.
	Until time.Time
	// Dropped counts the events of the key left out of the log in the
	// window before this one, which began at DroppedSince: log them as
	// a summary line, before the event's own. Zero: none.
	Dropped      int
	DroppedSince time.Time
}

// Allow decides whether the event of key at now is logged.
func (l *logLimiter) Allow(key string, now time.Time) logDecision {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.keys[key]
	if w == nil {
		if len(l.keys) >= limiterMaxKeys {
			l.prune(now)
		}
		if len(l.keys) >= limiterMaxKeys {
			key = limiterOverflowKey
			w = l.keys[key]
		}
	}
	var d logDecision
	if w == nil || !now.Before(w.start.Add(l.window)) {
		if w != nil && w.dropped > 0 {
			d.Dropped, d.DroppedSince = w.dropped, w.start
		}
		w = &logWindow{start: now}
		l.keys[key] = w
	}
	d.Until = w.start.Add(l.window)
	if w.logged < l.max {
		w.logged++
		d.Log, d.Last = true, w.logged == l.max
	} else {
		w.dropped++
	}
	return d
}

// prune forgets the windows that ended with nothing left out: nothing is
// owed to their keys.
func (l *logLimiter) prune(now time.Time) {
	for k, w := range l.keys {
		if w.dropped == 0 && !now.Before(w.start.Add(l.window)) {
			delete(l.keys, k)
		}
	}
}
