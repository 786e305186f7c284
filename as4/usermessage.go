package as4

import (
	"encoding/xml"
	"strings"

	"github.com/txinbox/txinbox/as4/internal/wire"
	"github.com/txinbox/txinbox/edi/ebms"
)

// UserMessage is the complete eb:UserMessage header of a message: of a
// received one, what the payload hash covers besides the payloads and
// what the receipt copies; of a sent one, what Envelope writes. Text values are trimmed of leading and trailing XML white space.
type UserMessage struct {
	MPC            string // @mpc, optional
	Timestamp      string // eb:MessageInfo/eb:Timestamp as written
	MessageID      string
	RefToMessageID string
	From, To       ebms.Party
	AgreementRef   AgreementRef
	Service        ebms.Service
	Action         string
	ConversationID string
	// Properties are eb:MessageProperties/eb:Property, in document order.
	Properties []Property
	// PartInfos are eb:PayloadInfo/eb:PartInfo, in document order.
	PartInfos []PartInfo
}

// AgreementRef is eb:CollaborationInfo/eb:AgreementRef.
type AgreementRef struct {
	Value, Type, PMode string
}

// Property is one eb:Property.
type Property struct {
	Name  string `json:"name"`
	Type  string `json:"type,omitempty"`
	Value string `json:"value"`
}

// PartInfo is one eb:PartInfo: a reference to a payload and its
// properties.
type PartInfo struct {
	Href        string
	Schema      PartSchema
	Description Description
	Properties  []Property // eb:PartProperties/eb:Property
}

// Description is an eb:Description with its xml:lang.
type Description struct {
	Lang, Value string
}

// PartSchema is eb:PartInfo/eb:Schema.
type PartSchema struct {
	Location, Version, Namespace string
}

const ns = ebms.NamespaceEbMS

// The shapes decoded from eb:UserMessage. The ebms parser has checked the
// required elements and cardinalities before these are read.
type (
	userMessageXML struct {
		MPC         string `xml:"mpc,attr"`
		MessageInfo struct {
			Timestamp      string `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ Timestamp"`
			MessageID      string `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ MessageId"`
			RefToMessageID string `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ RefToMessageId"`
		} `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ MessageInfo"`
		From          partyXML `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ PartyInfo>From"`
		To            partyXML `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ PartyInfo>To"`
		Collaboration struct {
			AgreementRef struct {
				Type  string `xml:"type,attr"`
				PMode string `xml:"pmode,attr"`
				Value string `xml:",chardata"`
			} `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ AgreementRef"`
			Services        []typedXML `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ Service"`
			Actions         []string   `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ Action"`
			ConversationIDs []string   `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ ConversationId"`
		} `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ CollaborationInfo"`
		Properties []propertyXML `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ MessageProperties>Property"`
		PartInfos  []partInfoXML `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ PayloadInfo>PartInfo"`
	}
	partyXML struct {
		PartyIDs []typedXML `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ PartyId"`
		Roles    []string   `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ Role"`
	}
	typedXML struct {
		Type  string `xml:"type,attr"`
		Value string `xml:",chardata"`
	}
	propertyXML struct {
		Name  string `xml:"name,attr"`
		Type  string `xml:"type,attr"`
		Value string `xml:",chardata"`
	}
	partInfoXML struct {
		Href   string `xml:"href,attr"`
		Schema struct {
			Location  string `xml:"location,attr"`
			Version   string `xml:"version,attr"`
			Namespace string `xml:"namespace,attr"`
		} `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ Schema"`
		Description struct {
			Lang  string `xml:"http://www.w3.org/XML/1998/namespace lang,attr"`
			Value string `xml:",chardata"`
		} `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ Description"`
		Properties []propertyXML `xml:"http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/ PartProperties>Property"`
	}
)

func (x *userMessageXML) userMessage() UserMessage {
	c := &x.Collaboration
	return UserMessage{
		MPC: strings.TrimSpace(x.MPC), Timestamp: wire.Trim(x.MessageInfo.Timestamp),
		MessageID: wire.Trim(x.MessageInfo.MessageID), RefToMessageID: wire.Trim(x.MessageInfo.RefToMessageID),
		From: x.From.party(), To: x.To.party(),
		AgreementRef: AgreementRef{Value: wire.Trim(c.AgreementRef.Value), Type: c.AgreementRef.Type, PMode: c.AgreementRef.PMode},
		Service:      ebms.Service{Type: firstOf(c.Services).Type, Value: wire.Trim(firstOf(c.Services).Value)},
		Action:       wire.Trim(firstOf(c.Actions)), ConversationID: wire.Trim(firstOf(c.ConversationIDs)),
		Properties: properties(x.Properties), PartInfos: partInfos(x.PartInfos),
	}
}

// firstOf returns the first element of s, or the zero value.
func firstOf[T any](s []T) T {
	var zero T
	if len(s) == 0 {
		return zero
	}
	return s[0]
}

func (p *partyXML) party() ebms.Party {
	out := ebms.Party{Role: wire.Trim(firstOf(p.Roles))}
	for _, id := range p.PartyIDs {
		out.IDs = append(out.IDs, ebms.PartyID{Type: id.Type, ID: wire.Trim(id.Value)})
	}
	return out
}

func properties(ps []propertyXML) []Property {
	var out []Property
	for _, p := range ps {
		out = append(out, Property{Name: p.Name, Type: p.Type, Value: wire.Trim(p.Value)})
	}
	return out
}

func partInfos(ps []partInfoXML) []PartInfo {
	var out []PartInfo
	for _, p := range ps {
		out = append(out, PartInfo{
			Href:        strings.TrimSpace(p.Href),
			Schema:      PartSchema{Location: p.Schema.Location, Version: p.Schema.Version, Namespace: p.Schema.Namespace},
			Description: Description{Lang: p.Description.Lang, Value: wire.Trim(p.Description.Value)},
			Properties:  properties(p.Properties),
		})
	}
	return out
}

// missingElements returns the first element the ebMS 3.0 header schema
// requires in eb:UserMessage that is missing, empty where the schema
// wants a non-empty string, or repeated where it allows one; "" if none.
// (MessageInfo, MessageId and the From PartyId are checked by ebms.Parse.)
func (x *userMessageXML) missingElements() string {
	c := &x.Collaboration
	for _, p := range []struct {
		name  string
		party *partyXML
	}{{"eb:From", &x.From}, {"eb:To", &x.To}} {
		switch {
		case len(p.party.PartyIDs) == 0:
			return "eb:PartyInfo/" + p.name + "/eb:PartyId is missing"
		case len(p.party.Roles) != 1 || wire.Trim(p.party.Roles[0]) == "":
			return "eb:PartyInfo/" + p.name + " must have one non-empty eb:Role"
		}
		for _, id := range p.party.PartyIDs {
			if wire.Trim(id.Value) == "" {
				return "eb:PartyInfo/" + p.name + "/eb:PartyId is empty"
			}
		}
	}
	switch {
	case len(c.Services) != 1 || wire.Trim(c.Services[0].Value) == "":
		return "eb:CollaborationInfo must have one non-empty eb:Service"
	case len(c.Actions) != 1:
		return "eb:CollaborationInfo must have one eb:Action"
	case len(c.ConversationIDs) != 1:
		return "eb:CollaborationInfo must have one eb:ConversationId"
	}
	for _, p := range x.Properties {
		if p.Name == "" {
			return "an eb:MessageProperties/eb:Property has no name"
		}
	}
	for _, pi := range x.PartInfos {
		for _, p := range pi.Properties {
			if p.Name == "" {
				return "an eb:PartProperties/eb:Property has no name"
			}
		}
	}
	return ""
}

// Property returns the value of the first property named name, or "".
func (pi *PartInfo) Property(name string) string {
	for _, p := range pi.Properties {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

// xmlWriter writes the canonical XML of the endpoint's own documents: the
// eb prefix for the ebMS namespace, attributes in a fixed order, no
// insignificant white space.
type xmlWriter struct{ b strings.Builder }

func (w *xmlWriter) open(name string, attrs ...string) {
	w.b.WriteString("<" + name)
	for i := 0; i+1 < len(attrs); i += 2 {
		if attrs[i+1] == "" {
			continue
		}
		w.b.WriteString(" " + attrs[i] + `="`)
		xml.EscapeText(&w.b, []byte(attrs[i+1])) //nolint:errcheck // strings.Builder does not fail
		w.b.WriteString(`"`)
	}
	w.b.WriteString(">")
}

func (w *xmlWriter) close(name string) { w.b.WriteString("</" + name + ">") }

// text writes <name attrs>value</name>.
func (w *xmlWriter) text(name, value string, attrs ...string) {
	w.open(name, attrs...)
	xml.EscapeText(&w.b, []byte(value)) //nolint:errcheck // strings.Builder does not fail
	w.close(name)
}

// optText writes the element only when value is not empty.
func (w *xmlWriter) optText(name, value string, attrs ...string) {
	if value != "" {
		w.text(name, value, attrs...)
	}
}

// writeUserMessage writes m as eb:UserMessage; the caller declares the eb
// prefix.
func (w *xmlWriter) writeUserMessage(m *UserMessage) {
	w.open("eb:UserMessage", "mpc", m.MPC)
	w.open("eb:MessageInfo")
	w.text("eb:Timestamp", m.Timestamp)
	w.text("eb:MessageId", m.MessageID)
	w.optText("eb:RefToMessageId", m.RefToMessageID)
	w.close("eb:MessageInfo")
	w.open("eb:PartyInfo")
	w.writeParty("eb:From", &m.From)
	w.writeParty("eb:To", &m.To)
	w.close("eb:PartyInfo")
	w.open("eb:CollaborationInfo")
	w.optText("eb:AgreementRef", m.AgreementRef.Value, "type", m.AgreementRef.Type, "pmode", m.AgreementRef.PMode)
	w.text("eb:Service", m.Service.Value, "type", m.Service.Type)
	w.text("eb:Action", m.Action)
	w.text("eb:ConversationId", m.ConversationID)
	w.close("eb:CollaborationInfo")
	if len(m.Properties) > 0 {
		w.open("eb:MessageProperties")
		w.writeProperties(m.Properties)
		w.close("eb:MessageProperties")
	}
	if len(m.PartInfos) > 0 {
		w.open("eb:PayloadInfo")
		for i := range m.PartInfos {
			w.writePartInfo(&m.PartInfos[i])
		}
		w.close("eb:PayloadInfo")
	}
	w.close("eb:UserMessage")
}

func (w *xmlWriter) writeParty(name string, p *ebms.Party) {
	w.open(name)
	for _, id := range p.IDs {
		w.text("eb:PartyId", id.ID, "type", id.Type)
	}
	w.text("eb:Role", p.Role)
	w.close(name)
}

func (w *xmlWriter) writeProperties(ps []Property) {
	for _, p := range ps {
		w.text("eb:Property", p.Value, "name", p.Name, "type", p.Type)
	}
}

func (w *xmlWriter) writePartInfo(pi *PartInfo) {
	w.open("eb:PartInfo", "href", pi.Href)
	if s := pi.Schema; s != (PartSchema{}) {
		w.open("eb:Schema", "location", s.Location, "version", s.Version, "namespace", s.Namespace)
		w.close("eb:Schema")
	}
	w.optText("eb:Description", pi.Description.Value, "xml:lang", pi.Description.Lang)
	if len(pi.Properties) > 0 {
		w.open("eb:PartProperties")
		w.writeProperties(pi.Properties)
		w.close("eb:PartProperties")
	}
	w.close("eb:PartInfo")
}

// CanonicalXML returns m as canonical XML with the eb namespace declared:
// the form the payload hash covers and the database stores.
func (m *UserMessage) CanonicalXML() string {
	var w xmlWriter
	w.writeUserMessage(m)
	s := w.b.String()
	return strings.Replace(s, "<eb:UserMessage", `<eb:UserMessage xmlns:eb="`+ns+`"`, 1)
}

// Envelope returns the SOAP 1.2 envelope of a user message whose header is
// m, without payloads in the Body: the root part that a sending MSH posts
// (package as4/as4client), with every value escaped.
func (m *UserMessage) Envelope() []byte {
	v := soap12
	var w xmlWriter
	w.b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	w.open(v.prefix+":Envelope", "xmlns:"+v.prefix, v.ns, "xmlns:eb", ns)
	w.open(v.prefix + ":Header")
	w.open("eb:Messaging", v.prefix+":mustUnderstand", v.mustUnderstand)
	w.writeUserMessage(m)
	w.close("eb:Messaging")
	w.close(v.prefix + ":Header")
	w.open(v.prefix + ":Body")
	w.close(v.prefix + ":Body")
	w.close(v.prefix + ":Envelope")
	return []byte(w.b.String())
}
