// Package purger forwards to package purge, the purger's public home, for
// the callers inside the module that still import it (the purge benchmark).
package purger

import (
	"github.com/txinbox/txinbox/purge"
	"github.com/txinbox/txinbox/store"
)

// Config is purge.Config.
type Config = purge.Config

// ScopeRetention is purge.ScopeRetention.
type ScopeRetention = purge.ScopeRetention

// Purger is purge.Purger.
type Purger = purge.Purger

// New is purge.New.
func New(p store.Purger, cfg Config) (*Purger, error) { return purge.New(p, cfg) }
