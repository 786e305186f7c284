package as4client

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"net/textproto"
	"strings"
	"unicode/utf8"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/internal/wire"
	"github.com/txinbox/txinbox/edi/ebms"
)

// rootContentID is the Content-ID of the SOAP envelope's MIME part.
const rootContentID = "envelope@txinbox"

func (m Outgoing) withDefaults() Outgoing {
	if m.ConversationID == "" {
		m.ConversationID = m.MessageID
	}
	if m.From.Role == "" {
		m.From.Role = RoleInitiator
	}
	if m.To.Role == "" {
		m.To.Role = RoleResponder
	}
	payloads := make([]Payload, len(m.Payloads))
	for i, p := range m.Payloads {
		if p.ContentID == "" {
			p.ContentID = fmt.Sprintf("payload-%d@txinbox", i+1)
		}
		if p.ContentType == "" {
			p.ContentType = "application/octet-stream"
		}
		payloads[i] = p
	}
	m.Payloads = payloads
	return m
}

// validate checks what the receiver would refuse and what could break the
// MIME headers; XML escaping is left to the writer.
func (m *Outgoing) validate() error {
	if err := checkMessageID("MessageID", m.MessageID, true); err != nil {
		return err
	}
	if err := checkMessageID("RefToMessageID", m.RefToMessageID, false); err != nil {
		return err
	}
	if m.Timestamp.IsZero() {
		return &OutgoingError{Field: "Timestamp", Msg: "required, and the same on every resend (take it from the stored message, not the clock)"}
	}
	if y := m.Timestamp.UTC().Year(); y < 1 || y > 9999 {
		return &OutgoingError{Field: "Timestamp", Msg: fmt.Sprintf("year %d is not writable as an xsd:dateTime", y)}
	}
	for _, f := range []struct {
		name, value string
	}{{"Service.Value", m.Service.Value}, {"Action", m.Action}} {
		if strings.TrimSpace(f.value) == "" {
			return &OutgoingError{Field: f.name, Msg: "required"}
		}
	}
	if err := checkParty("From", &m.From); err != nil {
		return err
	}
	if err := checkParty("To", &m.To); err != nil {
		return err
	}
	if err := checkTexts(m.texts()); err != nil {
		return err
	}
	return m.checkPayloads()
}

func checkParty(field string, p *ebms.Party) error {
	if len(p.IDs) == 0 {
		return &OutgoingError{Field: field + ".IDs", Msg: "at least one PartyId is required"}
	}
	for i, id := range p.IDs {
		if strings.TrimSpace(id.ID) == "" {
			return &OutgoingError{Field: fmt.Sprintf("%s.IDs[%d].ID", field, i), Msg: "required"}
		}
	}
	return nil
}

// checkMessageID accepts printable ASCII without white space and angle
// brackets: a msg-id without its brackets, usable in a Content-ID.
func checkMessageID(field, id string, required bool) error {
	switch {
	case id == "" && required:
		return &OutgoingError{Field: field, Msg: "required"}
	case len(id) > as4.MaxMessageIDLength:
		return &OutgoingError{Field: field, Msg: fmt.Sprintf("%d bytes long; at most %d are accepted", len(id), as4.MaxMessageIDLength)}
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c >= 0x7f || c == '<' || c == '>' {
			return &OutgoingError{Field: field, Msg: fmt.Sprintf("%q has %q at byte %d: use printable ASCII without white space, '<' and '>'", id, c, i)}
		}
	}
	return nil
}

// texts lists the message's text values with their field names.
func (m *Outgoing) texts() [][2]string {
	t := [][2]string{{"ConversationID", m.ConversationID}, {"MPC", m.MPC}, {"Service.Type", m.Service.Type},
		{"Service.Value", m.Service.Value}, {"Action", m.Action}, {"AgreementRef.Value", m.AgreementRef.Value},
		{"AgreementRef.Type", m.AgreementRef.Type}, {"AgreementRef.PMode", m.AgreementRef.PMode},
		{"From.Role", m.From.Role}, {"To.Role", m.To.Role}}
	for _, p := range []struct {
		name  string
		party *ebms.Party
	}{{"From", &m.From}, {"To", &m.To}} {
		for i, id := range p.party.IDs {
			t = append(t, [2]string{fmt.Sprintf("%s.IDs[%d].ID", p.name, i), id.ID}, [2]string{fmt.Sprintf("%s.IDs[%d].Type", p.name, i), id.Type})
		}
	}
	t = appendProperties(t, "Properties", m.Properties)
	for i, p := range m.Payloads {
		t = appendProperties(t, fmt.Sprintf("Payloads[%d].Properties", i), p.Properties)
	}
	return t
}

func appendProperties(t [][2]string, field string, ps []as4.Property) [][2]string {
	for i, p := range ps {
		f := fmt.Sprintf("%s[%d]", field, i)
		t = append(t, [2]string{f + ".Name", p.Name}, [2]string{f + ".Type", p.Type}, [2]string{f + ".Value", p.Value})
	}
	return t
}

// checkTexts refuses values that XML cannot carry (invalid UTF-8, control
// characters) and values with leading or trailing white space, which the
// receiver trims: the receipt would then not echo what was sent.
func checkTexts(texts [][2]string) error {
	for _, t := range texts {
		field, v := t[0], t[1]
		if !utf8.ValidString(v) {
			return &OutgoingError{Field: field, Msg: "not valid UTF-8"}
		}
		for i, r := range v {
			if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
				return &OutgoingError{Field: field, Msg: fmt.Sprintf("character %U at byte %d cannot be written in XML", r, i)}
			}
		}
		if strings.Trim(v, " \t\r\n") != v {
			return &OutgoingError{Field: field, Msg: fmt.Sprintf("%q has leading or trailing white space", v)}
		}
	}
	return nil
}

func (m *Outgoing) checkPayloads() error {
	seen := map[string]int{rootContentID: -1}
	for i := range m.Payloads {
		p := &m.Payloads[i]
		field := fmt.Sprintf("Payloads[%d]", i)
		if err := checkMessageID(field+".ContentID", p.ContentID, true); err != nil {
			return err
		}
		if j, dup := seen[p.ContentID]; dup {
			if j < 0 {
				return &OutgoingError{Field: field + ".ContentID", Msg: fmt.Sprintf("%q is the envelope's Content-ID", p.ContentID)}
			}
			return &OutgoingError{Field: field + ".ContentID", Msg: fmt.Sprintf("%q is also Payloads[%d]'s", p.ContentID, j)}
		}
		seen[p.ContentID] = i
		mt, params, err := mime.ParseMediaType(p.ContentType)
		if err == nil && !strings.Contains(mt, "/") {
			err = errors.New("not a type/subtype")
		}
		if err != nil {
			return &OutgoingError{Field: field + ".ContentType", Msg: fmt.Sprintf("%q: %v", p.ContentType, err)}
		}
		// Written back from its parsed form, so that nothing but a media
		// type reaches the MIME header.
		p.ContentType = mime.FormatMediaType(mt, params)
		if p.ContentType == "" {
			return &OutgoingError{Field: field + ".ContentType", Msg: fmt.Sprintf("%q cannot be written as a MIME header", mt)}
		}
	}
	return nil
}

// userMessage returns the eb:UserMessage of m, which is valid.
func (m *Outgoing) userMessage() as4.UserMessage {
	u := as4.UserMessage{
		MPC: m.MPC, Timestamp: wire.Timestamp(m.Timestamp), MessageID: m.MessageID, RefToMessageID: m.RefToMessageID,
		From: m.From, To: m.To, AgreementRef: m.AgreementRef, Service: m.Service, Action: m.Action,
		ConversationID: m.ConversationID, Properties: m.Properties,
	}
	for _, p := range m.Payloads {
		props := p.Properties
		if (&as4.PartInfo{Properties: props}).Property("MimeType") == "" {
			mt, _, _ := mime.ParseMediaType(p.ContentType)
			props = append([]as4.Property{{Name: "MimeType", Value: mt}}, props...)
		}
		u.PartInfos = append(u.PartInfos, as4.PartInfo{Href: "cid:" + p.ContentID, Properties: props})
	}
	return u
}

// envelope returns the SOAP 1.2 envelope of m; every value goes through
// the XML writer's escaping.
func (m *Outgoing) envelope() []byte {
	u := m.userMessage()
	return u.Envelope()
}

// encode returns m as a multipart/related body (SOAP with attachments):
// the envelope as the root part, then each payload as a binary part.
func (m *Outgoing) encode() ([]byte, string, error) {
	return encodeMIME(m.envelope(), m.Payloads)
}

// encodeMIME packs an envelope and its attachments as multipart/related.
func encodeMIME(env []byte, payloads []Payload) ([]byte, string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	// A payload that happens to contain the random boundary would end its
	// part early; draw another boundary (never needed in practice).
	for containsBoundary(payloads, mw.Boundary()) {
		mw = multipart.NewWriter(&buf)
	}
	parts := []struct {
		id, ct string
		data   []byte
	}{{rootContentID, wire.ContentTypeSOAP12, env}}
	for _, p := range payloads {
		parts = append(parts, struct {
			id, ct string
			data   []byte
		}{p.ContentID, p.ContentType, p.Data})
	}
	for _, p := range parts {
		w, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type": {p.ct}, "Content-ID": {"<" + p.id + ">"}, "Content-Transfer-Encoding": {"binary"},
		})
		if err != nil {
			return nil, "", err
		}
		w.Write(p.data) //nolint:errcheck // bytes.Buffer does not fail
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	ct := mime.FormatMediaType("multipart/related", map[string]string{
		"boundary": mw.Boundary(), "type": "application/soap+xml", "start": "<" + rootContentID + ">",
	})
	return buf.Bytes(), ct, nil
}

func containsBoundary(payloads []Payload, b string) bool {
	for _, p := range payloads {
		if bytes.Contains(p.Data, []byte(b)) {
			return true
		}
	}
	return false
}
