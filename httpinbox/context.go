package httpinbox

import (
	"context"

	"github.com/txinbox/txinbox"
)

type txKey struct{}

type msgKey struct{}

// TxFromContext returns the inbox transaction a handler runs in, from its
// request's context (r.Context()): the handler's effects written with it
// commit together with the key and the stored response, or not at all.
// It reports false outside the middleware (a request of an Optional route
// without a key) or when TTx is not the inbox's transaction type.
func TxFromContext[TTx any](ctx context.Context) (TTx, bool) {
	tx, ok := ctx.Value(txKey{}).(TTx)
	return tx, ok
}

// MessageFromContext returns the request as the inbox's message (its
// Scope, ID, Payload, Headers), from a handler's request context.
func MessageFromContext(ctx context.Context) (*txinbox.Message, bool) {
	m, ok := ctx.Value(msgKey{}).(*txinbox.Message)
	return m, ok
}
