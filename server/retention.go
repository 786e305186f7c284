package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/source"
)

// Shortfall is a retention shorter than a source's redelivery horizon: a
// message delivered again after the retention would be processed again.
type Shortfall struct {
	// Retention is the scope's retention.
	Retention Retention
	// Horizon is what the source can deliver again.
	Horizon source.Horizon
}

// String names both figures and what the shortfall means.
func (s Shortfall) String() string {
	h, r := s.Horizon, s.Retention
	if h.Forever {
		return fmt.Sprintf("%s keeps messages for ever (%s): no retention covers it (%s); a message delivered "+
			"again after that would be processed again", h.What, h.Figure, r.Setting)
	}
	return fmt.Sprintf("%s is shorter than %s of %s: a message delivered again after %s would be processed again",
		r.Setting, h.Figure, h.What, duration.Format(r.Keep))
}

// RetentionError is Run's (and CheckRetention's) refusal to start: a
// retention is shorter than what a source can deliver again.
type RetentionError struct {
	// Shortfalls are the retentions too short, one per horizon.
	Shortfalls []Shortfall
	// Hint says what to do about them.
	Hint string
}

// Error is one line per shortfall, then the hint.
func (e *RetentionError) Error() string {
	var lines []string
	for _, s := range e.Shortfalls {
		lines = append(lines, s.String())
	}
	return strings.Join(append(lines, e.Hint), "\n")
}

// Shortfalls compares each retention with its horizons; a horizon kept
// for ever is never covered.
func Shortfalls(retention Retention, horizons []source.Horizon) []Shortfall {
	var out []Shortfall
	for _, h := range horizons {
		if h.Forever || retention.Keep < h.Within {
			out = append(out, Shortfall{Retention: retention, Horizon: h})
		}
	}
	return out
}

// CheckRetention reads each source's redelivery horizons (those that are a
// source.Horizoner, and the sources' and endpoints' RetryWindow) and
// compares them with the scope's retention. It returns a *RetentionError
// naming both figures of each shortfall, unless
// Config.AcceptShortRetention, which logs each as a warning instead; or
// the error of a source that could not be asked. Run calls it once its
// operations listener answers.
func (s *Server) CheckRetention(ctx context.Context) error {
	var short []Shortfall
	for _, e := range s.cfg.Endpoints {
		short = append(short, Shortfalls(e.Retention.or(s.cfg.Retention), windows(nil, e.RetryWindow))...)
	}
	for _, src := range s.cfg.Sources {
		hs, err := s.horizons(ctx, src)
		if err != nil {
			return fmt.Errorf("checking the retention against the %s source: %w", src.Name, err)
		}
		short = append(short, Shortfalls(src.Retention.or(s.cfg.Retention), windows(hs, src.RetryWindow))...)
	}
	if len(short) == 0 {
		return nil
	}
	if s.cfg.AcceptShortRetention {
		for _, sf := range short {
			s.cfg.Logger.Warn("txinbox: retention shorter than a source can deliver again, accepted by "+s.cfg.AcceptShortRetentionName,
				"retention", sf.Retention.Setting, "source", sf.Horizon.What, "horizon", sf.Horizon.Figure)
		}
		return nil
	}
	return &RetentionError{Shortfalls: short, Hint: "raise the retention, or accept the shortfall with " + s.cfg.AcceptShortRetentionName}
}

// horizons reads the broker's horizons of src, if it is a
// source.Horizoner, within Config.HorizonTimeout.
func (s *Server) horizons(ctx context.Context, src Source) ([]source.Horizon, error) {
	hz, ok := src.Source.(source.Horizoner)
	if !ok {
		return nil, nil
	}
	step := fmt.Sprintf("checking the retention against the %s source (up to %s)", src.Name, s.cfg.HorizonTimeout)
	s.starting.Store(&step)
	defer s.starting.Store(nil)
	hctx, cancel := context.WithTimeout(ctx, s.cfg.HorizonTimeout)
	defer cancel()
	return hz.RedeliveryHorizons(hctx)
}

// windows adds a retry window, when one is set, to the horizons hs.
func windows(hs []source.Horizon, window source.Horizon) []source.Horizon {
	if window.Within > 0 || window.Forever {
		hs = append(hs, window)
	}
	return hs
}
