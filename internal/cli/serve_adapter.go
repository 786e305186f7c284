package cli

import (
	"context"
	"log/slog"
	"sort"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/store"
)

// sourceAdapter offers a serveSource (its broker calls made here, in
// serve_sources.go) as a source.Source with the optional interfaces
// package server asks for, until each source package offers them itself.
type sourceAdapter struct{ s *serveSource }

var (
	_ source.Readier   = sourceAdapter{}
	_ source.Lagger    = sourceAdapter{}
	_ source.Horizoner = sourceAdapter{}
)

// Run consumes until ctx is done.
func (a sourceAdapter) Run(ctx context.Context) error { return a.s.run(ctx) }

// Ready reports whether the source is connected.
func (a sourceAdapter) Ready(ctx context.Context) error {
	if a.s.ready == nil {
		return nil
	}
	return a.s.ready(ctx)
}

// Lag reads the messages waiting at the broker, by partition.
func (a sourceAdapter) Lag(ctx context.Context) ([]source.Lag, error) {
	if a.s.lag == nil {
		return nil, nil
	}
	m, err := a.s.lag(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]source.Lag, 0, len(m))
	for part, n := range m {
		out = append(out, source.Lag{Partition: part, Messages: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out, nil
}

// RedeliveryHorizons reads how long the broker can deliver a message again.
func (a sourceAdapter) RedeliveryHorizons(ctx context.Context) ([]source.Horizon, error) {
	if a.s.horizons == nil {
		return nil, nil
	}
	hs, err := a.s.horizons(ctx)
	out := make([]source.Horizon, 0, len(hs))
	for _, h := range hs {
		out = append(out, source.Horizon{What: h.source, Figure: h.figure, Within: h.d, Forever: h.forever})
	}
	return out, err
}

// addSources builds the broker sources of the flags and of the config
// file's lists, their processors with the server's hooks and the
// configured effect, and adds them to srv; the returned function closes
// them once the server stopped.
func addSources[TTx any](ctx context.Context, srv *server.Server, o *serveOptions, db *inboxDB, driver store.Driver[TTx],
	exec txExecFunc[TTx], env *Env, logger *slog.Logger) (func(), error) {
	outboxHeaders := o.Effect == effectOutbox && outboxHasHeaders(ctx, db)
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
				return txinbox.Config[TTx]{Scope: scope, Logger: lg, Hooks: srv.Hooks(),
					Handler: sourceHandler(o.Effect, o.EffectSQL, db.outboxTable(), outboxHeaders, exec, kind)}
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
			err := srv.Add(server.Source{Name: s.name, Scope: s.scope, Source: sourceAdapter{s}, Retention: f.retentions[kind].server()})
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
