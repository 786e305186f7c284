// Package as4view shows an AS4 store's messages in the web console:
// Lister adapts an as4.Lister (*as4pg.Store, *as4sqlite.Store,
// *as4my.Store) to console.AS4Lister. It lives apart from package
// console so that a program without AS4 does not link the AS4 stack.
package as4view

import (
	"context"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/console"
)

// Lister returns l as the console's AS4 lister (console.Config.AS4).
func Lister(l as4.Lister) console.AS4Lister { return lister{l} }

type lister struct{ l as4.Lister }

// ListAS4 lists l's messages under f.
func (l lister) ListAS4(ctx context.Context, f console.AS4Filter) ([]console.AS4Message, error) {
	rows, err := l.l.ListMessages(ctx, as4.ListFilter{Scope: f.Scope, Before: f.Before, Limit: f.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]console.AS4Message, len(rows))
	for i, r := range rows {
		out[i] = console.AS4Message{
			Scope: r.Scope, Key: r.Key, MessageID: r.MessageID, RefToID: r.RefToID,
			FromParty: r.FromParty, ToParty: r.ToParty, Service: r.Service, Action: r.Action,
			ConversationID: r.ConversationID, SOAPVersion: r.SOAPVersion, Parts: r.Parts, ReceivedAt: r.ReceivedAt,
			Receipt: console.AS4Receipt{MessageID: r.Receipt.MessageID, ContentType: r.Receipt.ContentType, Body: r.Receipt.Body},
		}
	}
	return out, nil
}
