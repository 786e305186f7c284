package ebms

import "fmt"

// one returns the single element of xs, or an ErrInvalidHeader error naming
// the element's path when there is none (and required) or several.
func one[T any](w *walker, xs []T, off int64, required bool, path ...string) (T, bool, error) {
	var zero T
	switch {
	case len(xs) == 1:
		return xs[0], true, nil
	case len(xs) == 0 && !required:
		return zero, false, nil
	case len(xs) == 0:
		return zero, false, w.errorf(off, ErrInvalidHeader, "missing", path...)
	}
	return zero, false, w.errorf(off, ErrInvalidHeader, fmt.Sprintf("appears %d times, once expected", len(xs)), path...)
}

// userMessage checks the elements the inbox key needs (MessageId and the
// From PartyId) and copies the header values.
func (w *walker) userMessage(u *userMessageXML, off int64) (*Message, error) {
	const um = "eb:UserMessage"
	m := &Message{SOAPVersion: "1.2", Offset: off, MPC: trim(u.MPC)}
	if w.soap == NamespaceSOAP11 {
		m.SOAPVersion = "1.1"
	}
	mi, _, err := one(w, u.MessageInfo, off, true, um, "eb:MessageInfo")
	if err != nil {
		return nil, err
	}
	id, _, err := one(w, mi.MessageID, off, true, um, "eb:MessageInfo", "eb:MessageId")
	if err != nil {
		return nil, err
	}
	if m.MessageID = trim(id); m.MessageID == "" {
		return nil, w.errorf(off, ErrInvalidHeader, "empty", um, "eb:MessageInfo", "eb:MessageId")
	}
	m.Timestamp, m.RefToMessageID = first(mi.Timestamp), first(mi.RefToMessageID)
	pi, _, err := one(w, u.PartyInfo, off, true, um, "eb:PartyInfo")
	if err != nil {
		return nil, err
	}
	if m.From, err = w.party(pi.From, off, true, "eb:From"); err != nil {
		return nil, err
	}
	if m.To, err = w.party(pi.To, off, false, "eb:To"); err != nil {
		return nil, err
	}
	return m, w.collaboration(m, u.CollaborationInfo, off)
}

// party reads eb:From or eb:To; for From, a non-empty first PartyId is
// required because it scopes the MessageId in the key.
func (w *walker) party(ps []partyXML, off int64, required bool, name string) (Party, error) {
	path := []string{"eb:UserMessage", "eb:PartyInfo", name}
	p, ok, err := one(w, ps, off, required, path...)
	if err != nil || !ok {
		return Party{}, err
	}
	var out Party
	out.Role = first(p.Role)
	for _, id := range p.PartyID {
		out.IDs = append(out.IDs, PartyID{Type: trim(id.Type), ID: trim(id.Value)})
	}
	if !required {
		return out, nil
	}
	switch {
	case len(out.IDs) == 0:
		return Party{}, w.errorf(off, ErrInvalidHeader, "missing", append(path, "eb:PartyId")...)
	case out.IDs[0].ID == "":
		return Party{}, w.errorf(off, ErrInvalidHeader, "empty", append(path, "eb:PartyId")...)
	}
	return out, nil
}

func (w *walker) collaboration(m *Message, cs []collaborationXML, off int64) error {
	c, ok, err := one(w, cs, off, false, "eb:UserMessage", "eb:CollaborationInfo")
	if err != nil || !ok {
		return err
	}
	m.AgreementRef, m.Action, m.ConversationID = first(c.AgreementRef), first(c.Action), first(c.ConversationID)
	if len(c.Service) > 0 {
		m.Service = Service{Type: trim(c.Service[0].Type), Value: trim(c.Service[0].Value)}
	}
	return nil
}
