// Package as4effect runs an effect without Go (package effect) for the
// messages of the AS4 endpoint: as4.Config.Deliver of txinbox serve's
// --effect outbox|sql.
package as4effect

import (
	"context"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/effect"
)

// Deliver returns e as an as4.DeliverFunc, run in the inbox transaction
// after the AS4 tables are written: an outbox row per payload (its source
// the From PartyId), or the statements with the AS4 parameters of
// effect.Params. It returns nil for effect.None.
func Deliver[TTx any](e *effect.Effect[TTx]) as4.DeliverFunc[TTx] {
	if e.Spec().Mode == effect.None {
		return nil
	}
	return func(ctx context.Context, tx TTx, m *as4.Received) error {
		return e.Run(ctx, tx, Message(m))
	}
}

// Message is m as the effect sees it (effect.Message).
func Message(m *as4.Received) *effect.Message {
	u := m.UserMessage
	em := &effect.Message{Scope: m.Scope, Key: m.Key, Source: firstParty(u.From.IDs), Parts: make([]effect.Part, len(m.Parts))}
	for i, p := range m.Parts {
		em.Parts[i] = effect.Part{ContentType: p.MimeType(), Payload: p.Data}
	}
	var payload []byte
	if len(m.Parts) > 0 {
		payload = m.Parts[0].Data
	}
	em.Params = [effect.MaxParams]any{m.Scope, m.Key, u.MessageID, firstParty(u.From.IDs), firstParty(u.To.IDs),
		u.Service.Value, u.Action, u.ConversationID, payload, m.ReceivedAt}
	return em
}

func firstParty(ids []ebms.PartyID) string {
	if len(ids) == 0 {
		return ""
	}
	return ids[0].ID
}
