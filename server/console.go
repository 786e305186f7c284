package server

import (
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/txinbox/txinbox/console"
	"github.com/txinbox/txinbox/source"
)

// lateHandler serves the web console once Run has built it: the console
// lists the server's sources, which are added after New.
type lateHandler struct{ h atomic.Pointer[http.Handler] }

// ServeHTTP answers 503 until Run built the console.
func (l *lateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := l.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Retry-After", "1")
	http.Error(w, "the console starts with the server", http.StatusServiceUnavailable)
}

// consoleConfig is Config.Console with what the server knows filled in
// where it is empty: the sources (readiness and lag from their optional
// interfaces), the scopes with their retentions, the durability reader,
// the registry and the logger.
func (s *Server) consoleConfig() console.Config {
	c := *s.cfg.Console
	if c.Sources == nil {
		for _, src := range s.cfg.Sources {
			cs := console.Source{Name: src.Name, Scope: src.Scope}
			if r, ok := src.Source.(source.Readier); ok {
				cs.Ready = r.Ready
			}
			if l, ok := src.Source.(source.Lagger); ok {
				cs.Lag = l.Lag
			}
			c.Sources = append(c.Sources, cs)
		}
	}
	if c.Scopes == nil {
		for _, sr := range s.scopeRetentions() {
			c.Scopes = append(c.Scopes, console.Scope{Name: sr.Scope, Retention: sr.Retention})
		}
	}
	if c.Durability == nil {
		c.Durability = s.cfg.Durability
	}
	if c.Gatherer == nil {
		c.Gatherer = s.cfg.Registry
	}
	if c.Logger == nil {
		c.Logger = s.cfg.Logger
	}
	return c
}

// startConsole builds the console of Config.Console for the sources the
// server runs.
func (s *Server) startConsole() error {
	if s.cfg.Console == nil {
		return nil
	}
	h, err := console.New(s.consoleConfig())
	if err != nil {
		return fmt.Errorf("server: Config.Console: %w", err)
	}
	s.console.h.Store(&h)
	return nil
}
