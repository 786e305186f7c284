package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/duration"
)

// CutError is Run's error when a stop took longer than the shutdown
// timeout and cut batches or requests still in flight: nothing of them
// was acked, so their sources deliver them again.
type CutError struct {
	// Batches is the number of batch transactions cut.
	Batches int64
	// Stuck names the sources that had not stopped.
	Stuck []string
	// Requests is the endpoints' shutdown error when requests were cut.
	Requests error
	// Timeout is the shutdown timeout.
	Timeout time.Duration
}

// Error says what was cut after how long, and which sources had not stopped.
func (e *CutError) Error() string {
	var parts []string
	if e.Requests != nil {
		parts = append(parts, fmt.Sprintf("requests still in flight after %s were cut: %v", e.Timeout, e.Requests))
	}
	if e.Batches > 0 {
		parts = append(parts, fmt.Sprintf("%d batches still in flight after %s were cut (sources not stopped: %s)",
			e.Batches, e.Timeout, strings.Join(e.Stuck, ", ")))
	}
	return strings.Join(parts, "; ")
}

// unit is one thing Run runs: a source or a relay.
type unit struct {
	name, scope string
	run         func(context.Context) error
}

func (s *Server) units() []unit {
	var out []unit
	for _, src := range s.cfg.Sources {
		out = append(out, unit{src.Name, src.Scope, src.Source.Run})
	}
	for _, r := range s.cfg.Relays {
		out = append(out, unit{r.Name, "", r.Relay.Run})
	}
	return out
}

// run runs the units and endpoints until ctx is done or one fails, then
// stops them within the shutdown timeout.
func (s *Server) run(ctx context.Context, eps []*endpoint) error {
	runCtx, stopUnits := context.WithCancel(ctx)
	defer stopUnits()
	units := s.units()
	failed := make(chan error, len(units)+len(eps))
	var wg sync.WaitGroup
	stopped := make([]atomic.Bool, len(units))
	names := s.startUnits(runCtx, units, &wg, stopped, failed)
	for _, e := range eps {
		go func() {
			if err := e.srv.Serve(e.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				failed <- fmt.Errorf("%s endpoint: %w", e.Name, err)
			}
		}()
		s.progress("%s endpoint listening on http://%s%s", e.Name, e.ln.Addr(), e.Path)
	}
	for i := len(eps) - 1; i >= 0; i-- {
		names = append([]string{eps[i].Name}, names...)
	}
	s.ready.Store(true)
	s.progress("ready: %s", strings.Join(names, ", "))
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-failed:
	}
	s.ready.Store(false)
	stopUnits()
	err := errors.Join(runErr, s.stop(ctx, eps, units, &wg, stopped))
	if err == nil {
		s.progress("stopped")
	}
	return err
}

func (s *Server) startUnits(ctx context.Context, units []unit, wg *sync.WaitGroup, stopped []atomic.Bool, failed chan<- error) []string {
	names := []string{}
	for i, u := range units {
		wg.Go(func() {
			defer stopped[i].Store(true)
			err := u.run(ctx)
			if err == nil && ctx.Err() == nil {
				err = errors.New("stopped by itself before the server stopped")
			}
			switch {
			case err == nil:
			case u.scope == "": // a relay
				failed <- fmt.Errorf("%s: %w", u.name, err)
			default:
				failed <- fmt.Errorf("%s source: %w", u.name, err)
			}
		})
		names = append(names, u.name)
		if u.scope == "" {
			s.progress("%s running", u.name)
		} else {
			s.progress("%s source running, scope %s", u.name, u.scope)
		}
	}
	return names
}

// stop is the drain: the endpoints answer the requests in flight and the
// units finish their batches, within the shutdown timeout; then the
// batches still in flight are cut.
func (s *Server) stop(ctx context.Context, eps []*endpoint, units []unit, wg *sync.WaitGroup, stopped []atomic.Bool) error {
	timeout := s.cfg.ShutdownTimeout
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	cut := &CutError{Timeout: timeout}
	for _, e := range eps {
		if err := e.srv.Shutdown(dctx); err != nil {
			e.srv.Close()
			cut.Requests = errors.Join(cut.Requests, err)
		}
	}
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-dctx.Done():
		for i, u := range units {
			if !stopped[i].Load() {
				cut.Stuck = append(cut.Stuck, u.name)
			}
		}
		cut.Batches = s.cutAfterTimeout(cut.Stuck)
		s.awaitCut(drained)
	}
	if cut.Requests == nil && cut.Batches == 0 {
		return nil
	}
	return cut
}

// cutAfterTimeout is the end of a stop that took longer than the shutdown
// timeout: it cuts the batches in flight and returns how many there were.
// With none, only a source waiting on its broker held the stop (a Kafka
// consumer-group rebalance that does not end, say): nothing is lost, and
// it is only logged.
func (s *Server) cutAfterTimeout(stuck []string) int64 {
	n := s.inFlight.Load()
	// Nothing of the cut batches is acked: they come back and are
	// found in the inbox if they committed after all.
	s.cutHard()
	if n == 0 && len(stuck) > 0 {
		s.cfg.Logger.Warn(fmt.Sprintf("%s did not stop within %s, waiting on its broker (no batch was in flight: nothing is lost)",
			strings.Join(stuck, ", "), duration.Format(s.cfg.ShutdownTimeout)))
	}
	return n
}

// cutGrace is how long a stop waits after a cut for the sources to
// return before it returns anyway (a source stuck on its broker), unless
// a cut batch is still in its transaction.
var cutGrace = 5 * time.Second

// commitWait is txinbox.CommitWait, a variable for the tests.
var commitWait = txinbox.CommitWait

// awaitCut waits after a cut until the sources returned, or, after
// cutGrace, until no batch is in its transaction any more: a batch cut
// while its COMMIT was on the server ends once that COMMIT's outcome is
// known, within txinbox.CommitWait, so Run does not return while a commit
// it cut may still land. A source stuck on its broker with no batch in
// flight holds the stop for cutGrace only.
func (s *Server) awaitCut(drained <-chan struct{}) {
	grace := time.After(cutGrace)
	bound := time.After(cutGrace + commitWait)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	graceOver := false
	for {
		select {
		case <-drained:
			return
		case <-bound:
			return
		case <-grace:
			graceOver = true
		case <-tick.C:
		}
		if graceOver && s.inFlight.Load() == 0 {
			return
		}
	}
}

// drainHook detaches each batch transaction of the broker sources from the
// stop: the sources stop fetching (their run context is cancelled) but a
// batch already in its transaction commits and is acked, rather than
// rolled back and redelivered. hard, cancelled when the shutdown timeout
// passes, still cuts it: then nothing of it is acked. inFlight counts the
// batches in their transaction, for a stop that times out to say whether
// it cut any.
type drainHook struct {
	hard     context.Context
	inFlight *atomic.Int64
}

var _ txinbox.BatchStartHook = drainHook{}

// OnBatchStart gives the batch a context that only hard cancels.
func (h drainHook) OnBatchStart(ctx context.Context, _ int) (context.Context, func(error)) {
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(h.hard, cancel)
	h.inFlight.Add(1)
	return bctx, func(error) { h.inFlight.Add(-1); stop(); cancel() }
}
