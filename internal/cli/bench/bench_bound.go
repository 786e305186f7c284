package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/txinbox/txinbox/duration"
)

// benchFailure is a scenario that failed or passed its deadline: the
// report keeps its reason and everything else the run measured.
type benchFailure struct {
	Scenario string `json:"scenario"`
	Error    string `json:"error"`
}

// errAbandoned marks a scenario left behind past its deadline: what it
// writes may still change, so the run reads none of it.
var errAbandoned = errors.New("abandoned")

// abandonAfter is how long a scenario past its deadline has to return
// before the run goes on without it.
const abandonAfter = 30 * time.Second

// bounded runs one scenario (or one slice of it) under the run's
// --scenario-timeout. A scenario that passes it is canceled; one that does
// not return abandonAfter later is left behind (its goroutine ends with the
// process) so that the run still reports what it measured.
func (be *benchEnv) bounded(ctx context.Context, name string, run func(context.Context) error) error {
	timeout := be.o.scenarioTimeout
	cause := fmt.Errorf("%s: passed its deadline (--scenario-timeout %s)", name, duration.Format(timeout))
	sctx, cancel := context.WithTimeoutCause(ctx, timeout, cause)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(sctx) }()
	var err error
	select {
	case err = <-done:
	case <-sctx.Done():
		select {
		case err = <-done:
		case <-time.After(abandonAfter):
			return fmt.Errorf("%w, and did not stop within %s after it (%w)", cause, abandonAfter, errAbandoned)
		}
	}
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(sctx), cause) {
		// The scenario's own error (a canceled wait) says where it
		// stood; the cause says why it was canceled.
		return fmt.Errorf("%w: %v", cause, err)
	}
	return err
}

// fail records a failed scenario in the report (once per scenario).
func (rep *benchReport) fail(scenario string, err error) {
	for _, f := range rep.Failed {
		if f.Scenario == scenario {
			return
		}
	}
	rep.Failed = append(rep.Failed, benchFailure{Scenario: scenario, Error: err.Error()})
}

// failed reports whether a scenario of the run failed.
func (rep *benchReport) failed() bool {
	if len(rep.Failed) > 0 {
		return true
	}
	for _, r := range rep.Results {
		if r.Error != "" {
			return true
		}
	}
	return false
}
