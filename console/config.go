package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txinbox/txinbox/outbox"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/store"
)

// Config configures the console. Only Admin is required.
type Config struct {
	// Admin is the inbox's store (pgstore.Driver, sqlitestore.Driver).
	// If it also implements store.Timeline the overview draws the chart
	// of the last hour. Required.
	Admin store.Admin
	// Outbox is the outbox of the same database (outboxpg.New,
	// outboxlite.New): its backlog on the overview and its failed rows,
	// with replay, on the outbox page. Defaults to none: no outbox page.
	Outbox outbox.Store
	// AS4 lists the received AS4 messages with their receipts
	// (as4view.Lister of an *as4pg.Store, *as4sqlite.Store or
	// *as4my.Store). Defaults
	// to none: no AS4 page.
	AS4 AS4Lister
	// EDI reads the EDI envelopes and keys of the stored payloads shown
	// on the dead letter and inspect pages (ediview.Read). Defaults to
	// none: payloads are shown without their EDI keys.
	EDI EDIReader
	// Scopes are the inbox's scopes with their retention, for the rows
	// waiting for the purge (received more than Retention ago). Scopes
	// the database holds but this list does not name are shown without
	// purge figures. Defaults to none.
	Scopes []Scope
	// Sources are the sources that feed the inbox, for their readiness
	// and lag on the overview. Defaults to none.
	Sources []Source
	// Durability, if set, is read at each view of the overview: the
	// database settings that decide whether a commit survives a crash or
	// a failover, those that can lose acknowledged messages in red, and
	// what a crash and a failover can lose. Defaults to none.
	Durability store.DurabilityReader
	// Gatherer is read for the outcome counters of this process
	// (txinbox_messages_total, duplicates included, which no table keeps)
	// on the overview. Defaults to none.
	Gatherer prometheus.Gatherer
	// Auth holds the credentials of the admin actions. With none the
	// console is read-only: no action is offered and every POST is
	// refused. With some, every page asks for them.
	Auth Auth
	// Prefix is the path the handler is mounted at, with a slash at both
	// ends. Defaults to "/ui/".
	Prefix string
	// Logger logs the admin actions and failures. Defaults to discarding.
	Logger *slog.Logger
	// BulkLimit caps the dead letters one filtered replay or drop
	// handles. Defaults to 1000.
	BulkLimit int
}

// Scope is one inbox scope and its retention.
type Scope struct {
	Name      string
	Retention time.Duration
}

// Source is one source of the inbox, as the service runs it.
type Source struct {
	// Name and Scope name the source and the scope it feeds, as its
	// messages' Source and the processor's Scope. Name is required.
	Name, Scope string
	// Ready returns nil when the source is connected and consuming
	// (source.Readier's Ready). Defaults to none: readiness unknown.
	Ready func(ctx context.Context) error
	// Lag reads the messages waiting at the broker (source.Lagger's
	// Lag). Defaults to none: lag unknown.
	Lag func(ctx context.Context) ([]source.Lag, error)
}

// Auth holds the console's credentials.
type Auth struct {
	// Token is accepted as "Authorization: Bearer TOKEN", and as the
	// password of basic auth with any user name (so a browser can use
	// it); the actor in the audit table is that user name, or "token".
	Token string
	// Users maps basic-auth user names to their passwords; the user name
	// is the actor in the audit table.
	Users map[string]string
}

func (a Auth) configured() bool { return a.Token != "" || len(a.Users) > 0 }

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = "/ui/"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.BulkLimit <= 0 {
		c.BulkLimit = 1000
	}
	return c
}

// Validate reports what New would refuse in c, without building the
// console (its templates): a program that builds it later checks its
// configuration early.
func (c Config) Validate() error { return c.withDefaults().validate() }

func (c Config) validate() error {
	switch {
	case c.Admin == nil:
		return errors.New("console: Config.Admin is nil")
	case !strings.HasPrefix(c.Prefix, "/") || !strings.HasSuffix(c.Prefix, "/"):
		return fmt.Errorf("console: Config.Prefix %q must start and end with a slash", c.Prefix)
	}
	for u, p := range c.Auth.Users {
		if u == "" || p == "" || strings.Contains(u, ":") {
			return fmt.Errorf("console: Config.Auth.Users: user %q needs a name without a colon and a password", u)
		}
	}
	for i, s := range c.Sources {
		if s.Name == "" {
			return fmt.Errorf("console: Config.Sources[%d].Name is empty", i)
		}
	}
	for i, s := range c.Scopes {
		if s.Name == "" || s.Retention < 0 {
			return fmt.Errorf("console: Config.Scopes[%d] (%q): needs a name and a retention >= 0", i, s.Name)
		}
	}
	return nil
}
