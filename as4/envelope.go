package as4

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/txinbox/txinbox/as4/internal/wire"
	"github.com/txinbox/txinbox/edi/ebms"
)

// envelope is what the endpoint reads from the SOAP envelope beyond the
// header values of ebms.Parse: the header blocks (for mustUnderstand), the
// whole eb:UserMessage and the SOAP Body's payloads, as the bytes in the
// envelope.
type envelope struct {
	soap      string // the SOAP namespace
	blocks    []headerBlock
	user      *userMessageXML
	body      []byte // the Body's content, trimmed of white space
	bodyID    string // the Body's wsu:Id or id
	bodyElems bool   // the Body has element content
	ids       map[string][]byte
	// signatureRefs are the ds:Reference elements of the wsse:Security
	// header's ds:Signature, unverified, as self-contained XML.
	signatureRefs [][]byte
}

// headerBlock is one child of the SOAP Header.
type headerBlock struct {
	name xml.Name
	// mustUnderstand is true when the block is targeted at this node and
	// marked mustUnderstand.
	mustUnderstand bool
}

// ourRoles are the SOAP roles (SOAP 1.2 role, SOAP 1.1 actor) this node
// plays as the ultimate receiver: a block without one, or addressed to
// next or ultimateReceiver. A block addressed to any other role (none
// included) is not targeted at this node, and SOAP 1.2 Part 1 §5.2.3
// says such a block is ignored, mustUnderstand or not.
var ourRoles = map[string]bool{
	"": true,
	"http://www.w3.org/2003/05/soap-envelope/role/ultimateReceiver": true,
	"http://www.w3.org/2003/05/soap-envelope/role/next":             true,
	"http://schemas.xmlsoap.org/soap/actor/next":                    true,
}

var errCharset = errors.New("unsupported character encoding")

// readEnvelope reads a SOAP envelope that ebms.Parse accepted. Offsets of
// the decoder index doc, so only encodings that pass bytes through
// unchanged (UTF-8, US-ASCII) are read; AS4 uses UTF-8.
func readEnvelope(doc []byte) (*envelope, *failure) {
	doc = bytes.TrimPrefix(doc, []byte("\xef\xbb\xbf"))
	d := xml.NewDecoder(bytes.NewReader(doc))
	var charset string
	d.CharsetReader = func(label string, r io.Reader) (io.Reader, error) {
		switch strings.ToLower(label) {
		case "utf-8", "utf8", "us-ascii", "ascii":
			return r, nil
		}
		charset = label
		return nil, errCharset
	}
	env, err := decodeEnvelope(d, doc)
	switch {
	case charset != "":
		return nil, senderFailure(ValueNotRecognized, fmt.Sprintf("the envelope's encoding %q is not supported: send UTF-8", charset))
	case err != nil:
		return nil, senderFailure(InvalidHeader, "reading the SOAP envelope: "+err.Error())
	}
	return env, nil
}

func decodeEnvelope(d *xml.Decoder, doc []byte) (*envelope, error) {
	var root *xml.StartElement
	for root == nil {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		if se, ok := t.(xml.StartElement); ok {
			root = &se
		}
	}
	env := &envelope{soap: root.Name.Space, ids: map[string][]byte{}}
	for {
		el, err := wire.NextChild(d)
		if err != nil || el == nil {
			return env, err
		}
		switch {
		case el.Name.Space == env.soap && el.Name.Local == "Header":
			err = env.readHeader(d)
		case el.Name.Space == env.soap && el.Name.Local == "Body":
			env.bodyID = idAttr(el.Attr)
			err = env.readBody(d, doc)
		default:
			err = d.Skip()
		}
		if err != nil {
			return nil, err
		}
	}
}

func (env *envelope) readHeader(d *xml.Decoder) error {
	for {
		el, err := wire.NextChild(d)
		if err != nil || el == nil {
			return err
		}
		targeted := env.targeted(el.Attr)
		env.blocks = append(env.blocks, headerBlock{name: el.Name, mustUnderstand: targeted && env.mustUnderstand(el.Attr)})
		switch {
		case el.Name.Space == ebms.NamespaceEbMS && el.Name.Local == "Messaging":
			err = env.readMessaging(d)
		case el.Name.Space == NamespaceWSSE && el.Name.Local == "Security" && targeted && env.signatureRefs == nil:
			env.signatureRefs, err = signatureReferences(d)
		default:
			err = d.Skip()
		}
		if err != nil {
			return err
		}
	}
}

func (env *envelope) readMessaging(d *xml.Decoder) error {
	for {
		el, err := wire.NextChild(d)
		if err != nil || el == nil {
			return err
		}
		if el.Name.Space == ebms.NamespaceEbMS && el.Name.Local == "UserMessage" && env.user == nil {
			env.user = new(userMessageXML)
			err = d.DecodeElement(env.user, el)
		} else {
			err = d.Skip()
		}
		if err != nil {
			return err
		}
	}
}

// targeted reports whether a header block is addressed to this node: its
// SOAP 1.2 role or SOAP 1.1 actor is one of ourRoles.
func (env *envelope) targeted(attrs []xml.Attr) bool {
	name := "role"
	if env.soap == ebms.NamespaceSOAP11 {
		name = "actor"
	}
	for _, a := range attrs {
		if a.Name.Space == env.soap && a.Name.Local == name {
			return ourRoles[strings.TrimSpace(a.Value)]
		}
	}
	return true
}

// mustUnderstand reports whether a header block is marked mustUnderstand
// (whether it is targeted at this node is targeted's question). The
// attribute's name is compared ignoring case: phase4's samples carry
// S12:mustUnderStand, and a sender that meant it must not have its
// security header silently ignored.
func (env *envelope) mustUnderstand(attrs []xml.Attr) bool {
	must := false
	for _, a := range attrs {
		if a.Name.Space == env.soap && strings.EqualFold(a.Name.Local, "mustUnderstand") {
			v := strings.TrimSpace(a.Value)
			must = v == "1" || v == "true"
		}
	}
	return must
}

// idAttr returns an element's wsu:Id, id or xml:id.
func idAttr(attrs []xml.Attr) string {
	for _, a := range attrs {
		if a.Name.Local == "Id" || a.Name.Local == "id" {
			return strings.TrimSpace(a.Value)
		}
	}
	return ""
}

// readBody records the Body's content and every element in it that has an
// id, as the bytes of the envelope, for PartInfo references.
func (env *envelope) readBody(d *xml.Decoder, doc []byte) error {
	type open struct {
		id    string
		start int64
	}
	var stack []open
	start := d.InputOffset()
	for {
		before := d.InputOffset()
		t, err := d.Token()
		if err != nil {
			return err
		}
		switch t := t.(type) {
		case xml.StartElement:
			env.bodyElems = true
			stack = append(stack, open{id: idAttr(t.Attr), start: before})
		case xml.EndElement:
			if len(stack) == 0 {
				env.body = bytes.TrimSpace(doc[start:before])
				return nil
			}
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if _, dup := env.ids[o.id]; o.id != "" && !dup {
				env.ids[o.id] = doc[o.start:d.InputOffset()]
			}
		}
	}
}
