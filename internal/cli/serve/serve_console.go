package serve

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/console"
	"github.com/txinbox/txinbox/console/as4view"
	"github.com/txinbox/txinbox/console/ediview"
	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// consoleFlags configure the web console that serve mounts at /ui/ on
// --http-listen: read-only unless credentials are given.
type consoleFlags struct {
	off   bool
	token string
	users userList
}

// userList is --console-user NAME:PASSWORD, repeatable.
type userList []string

// String counts the users (their passwords are no default to show); ""
// when there are none, so that help adds no "(default 0 users)".
func (u *userList) String() string {
	if u == nil || len(*u) == 0 {
		return ""
	}
	return fmt.Sprintf("%d users", len(*u))
}

// Set adds one NAME:PASSWORD.
func (u *userList) Set(v string) error {
	name, pw, ok := strings.Cut(v, ":")
	if !ok || name == "" || pw == "" {
		return errors.New("want NAME:PASSWORD")
	}
	*u = append(*u, v)
	return nil
}

func (u *userList) Reset() { *u = nil }

func (c *consoleFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.off, "no-console", false, "do not serve the web console at /ui/ on --http-listen")
	fs.StringVar(&c.token, "console-token", "", "bearer token (or basic-auth password) that allows the console's admin actions: replay, drop (default: none, read-only)")
	fs.Var(&c.users, "console-user", "a `NAME:PASSWORD` allowed the console's admin actions by basic auth, named in the audit table (repeatable; default: none)")
}

// config is the console of serve over db, or nil with --no-console or
// without --http-listen: the payloads' EDI keys read with package edi;
// as4Store, when it lists messages, adds the AS4 page.
func (c *consoleFlags) config(db *clikit.InboxDB, as4Store any) *console.Config {
	if c.off {
		return nil
	}
	cfg := &console.Config{Admin: db.Admin, Outbox: db.OutboxStore(), EDI: ediview.Read, Auth: console.Auth{Token: c.token}}
	if l, ok := as4Store.(as4.Lister); ok {
		cfg.AS4 = as4view.Lister(l)
	}
	for _, u := range c.users {
		name, pw, _ := strings.Cut(u, ":")
		if cfg.Auth.Users == nil {
			cfg.Auth.Users = map[string]string{}
		}
		cfg.Auth.Users[name] = pw
	}
	return cfg
}
