package serve

import (
	"context"
	"log/slog"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/store"
)

// addSources builds the broker sources of the flags and of the config
// file's lists, their processors with the server's hooks and the
// configured effect, and adds them to srv; the returned function closes
// them once the server stopped.
func addSources[TTx any](ctx context.Context, srv *server.Server, o *serveOptions, db *clikit.InboxDB, driver store.Driver[TTx],
	exec clikit.TxExecFunc[TTx], env *clikit.Env, logger *slog.Logger) (func(), error) {
	outboxHeaders := o.Effect == effectOutbox && outboxHasHeaders(ctx, db)
	joinEffect := effectJoinable(ctx, db)
	var built []*serveSource
	closeAll := func() {
		for _, s := range built {
			s.close()
		}
	}
	for _, f := range o.allSources() {
		lg := logger
		if f.name != "" {
			lg = logger.With("source", f.name)
		}
		srcs, err := buildSources(f, sourceEnv[TTx]{driver: driver, logger: lg, getenv: env.Getenv,
			inbox: func(kind, scope string) txinbox.Config[TTx] {
				return WithSourceEffect(txinbox.Config[TTx]{Scope: scope, Logger: lg, Hooks: srv.Hooks()},
					o.Effect, o.EffectSQL, db.OutboxTable(), outboxHeaders, joinEffect, exec, kind)
			}})
		built = append(built, srcs...)
		if err != nil {
			closeAll()
			return nil, err
		}
		for _, s := range srcs {
			kind := s.name
			if f.name != "" {
				s.name = f.name
			}
			err := srv.Add(server.Source{Name: s.name, Scope: s.scope, Source: s.src, RetryWindow: s.window, Retention: f.retentions[kind]})
			if err != nil {
				closeAll()
				return nil, err
			}
		}
	}
	return closeAll, nil
}

// allSources are the flags' sources and each listed source's.
func (o *serveOptions) allSources() []*sourceFlags {
	out := []*sourceFlags{&o.sources}
	for i := range o.listed {
		out = append(out, &o.listed[i].flags)
	}
	return out
}
