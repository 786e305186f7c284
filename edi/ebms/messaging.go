package ebms

import (
	"encoding/xml"
	"fmt"
	"strings"
)

// The XML shapes read with DecodeElement. Repeated elements are decoded
// into slices so that a duplicate is reported instead of silently replaced.
type (
	userMessageXML struct {
		MPC               string             `xml:"mpc,attr"`
		MessageInfo       []messageInfoXML   `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ MessageInfo"`
		PartyInfo         []partyInfoXML     `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ PartyInfo"`
		CollaborationInfo []collaborationXML `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ CollaborationInfo"`
	}
	messageInfoXML struct {
		Timestamp      []string `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ Timestamp"`
		MessageID      []string `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ MessageId"`
		RefToMessageID []string `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ RefToMessageId"`
	}
	partyInfoXML struct {
		From []partyXML `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ From"`
		To   []partyXML `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ To"`
	}
	partyXML struct {
		PartyID []typedXML `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ PartyId"`
		Role    []string   `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ Role"`
	}
	typedXML struct {
		Type  string `xml:"type,attr"`
		Value string `xml:",chardata"`
	}
	collaborationXML struct {
		AgreementRef   []string   `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ AgreementRef"`
		Service        []typedXML `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ Service"`
		Action         []string   `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ Action"`
		ConversationID []string   `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ ConversationId"`
	}
	signalXML struct {
		MessageInfo []messageInfoXML `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ MessageInfo"`
		Receipt     []struct{}       `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ Receipt"`
		PullRequest []struct{}       `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ PullRequest"`
		Error       []struct {
			Code string `xml:"errorCode,attr"`
		} `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ Error"`
	}
	faultXML struct {
		Code12   string `xml:"Code>Value"`
		Reason12 string `xml:"Reason>Text"`
		Code11   string `xml:"faultcode"`
		Reason11 string `xml:"faultstring"`
	}
)

func (f *faultXML) toError(path string, off int64) *FaultError {
	e := &FaultError{Code: trim(f.Code12), Reason: trim(f.Reason12), Path: path, Offset: off}
	if e.Code == "" {
		e.Code, e.Reason = trim(f.Code11), trim(f.Reason11)
	}
	return e
}

// trim removes leading and trailing XML white space.
func trim(s string) string { return strings.Trim(s, " \t\r\n") }

// unit is one message unit of eb:Messaging.
type unit struct {
	user   *userMessageXML
	signal *signalXML
	off    int64
	name   string
}

// messaging reads an eb:Messaging block. It returns the user message, or a
// *SignalError or *Error saying why there is none.
func (w *walker) messaging(m *xml.StartElement, off int64) (*Message, error) {
	w.push(m.Name)
	defer w.pop()
	var units []unit
	for {
		el, elOff, err := w.child()
		if err != nil {
			return nil, err
		}
		if el == nil {
			break
		}
		u := unit{off: elOff, name: display(el.Name)}
		switch {
		case el.Name.Space == NamespaceEbMS && el.Name.Local == "UserMessage":
			u.user = new(userMessageXML)
			err = w.decodeIn(u.user, el)
		case el.Name.Space == NamespaceEbMS && el.Name.Local == "SignalMessage":
			u.signal = new(signalXML)
			err = w.decodeIn(u.signal, el)
		default:
			err = w.skip()
			u.name = ""
		}
		if err != nil {
			return nil, err
		}
		if u.name != "" {
			units = append(units, u)
		}
	}
	return w.fromUnits(units, off)
}

func (w *walker) fromUnits(units []unit, off int64) (*Message, error) {
	switch len(units) {
	case 0:
		return nil, w.errorf(off, ErrInvalidHeader, "eb:Messaging has no eb:UserMessage (and no eb:SignalMessage)")
	case 1:
	default:
		var names []string
		for _, u := range units {
			names = append(names, u.name)
		}
		return nil, w.errorf(off, ErrInvalidHeader, fmt.Sprintf(
			"eb:Messaging bundles %d message units (%s); AS4 allows exactly one", len(units), strings.Join(names, ", ")))
	}
	u := units[0]
	if u.signal != nil {
		return nil, w.signal(u.signal, u.off)
	}
	return w.userMessage(u.user, u.off)
}

func (w *walker) signal(s *signalXML, off int64) error {
	e := &SignalError{Path: w.pathString("eb:SignalMessage"), Offset: off}
	switch {
	case len(s.Receipt) > 0:
		e.Signal = "Receipt"
	case len(s.Error) > 0:
		e.Signal = "Error"
	case len(s.PullRequest) > 0:
		e.Signal = "PullRequest"
	}
	for _, x := range s.Error {
		e.ErrorCodes = append(e.ErrorCodes, x.Code)
	}
	if len(s.MessageInfo) > 0 {
		mi := s.MessageInfo[0]
		e.MessageID, e.RefToMessageID = first(mi.MessageID), first(mi.RefToMessageID)
	}
	return e
}

func first(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return trim(xs[0])
}
