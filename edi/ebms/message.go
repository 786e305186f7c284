package ebms

// Namespaces of the elements the parser reads.
const (
	NamespaceSOAP11 = "http://schemas.xmlsoap.org/soap/envelope/"
	NamespaceSOAP12 = "http://www.w3.org/2003/05/soap-envelope"
	NamespaceEbMS   = "http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/"
)

// Message is the ebMS 3.0 user message of an AS4 message: the header values
// an inbox needs. Values are trimmed of leading and trailing XML white space.
type Message struct {
	// SOAPVersion is "1.1" or "1.2".
	SOAPVersion string
	// Offset is the byte offset of the eb:UserMessage start tag.
	Offset int64

	MessageID      string // eb:MessageInfo/eb:MessageId
	RefToMessageID string // eb:MessageInfo/eb:RefToMessageId, optional
	Timestamp      string // eb:MessageInfo/eb:Timestamp as written, not validated

	From Party // eb:PartyInfo/eb:From; From.IDs has at least one entry
	To   Party // eb:PartyInfo/eb:To

	AgreementRef   string  // eb:CollaborationInfo/eb:AgreementRef
	Service        Service // eb:CollaborationInfo/eb:Service
	Action         string  // eb:CollaborationInfo/eb:Action
	ConversationID string  // eb:CollaborationInfo/eb:ConversationId
	MPC            string  // eb:UserMessage/@mpc, optional
}

// Party is the sender (From) or receiver (To) of a user message.
type Party struct {
	IDs  []PartyID // eb:PartyId, in document order
	Role string    // eb:Role
}

// PartyID is one eb:PartyId with its optional type attribute.
type PartyID struct {
	Type string // @type, e.g. "urn:fdc:peppol.eu:2017:identifiers:ap"
	ID   string
}

// Service is eb:Service with its optional type attribute.
type Service struct {
	Type  string
	Value string
}

// Sender returns the first From PartyId, the one that scopes the
// MessageId in the inbox key (as Domibus does for duplicate detection).
func (m *Message) Sender() PartyID {
	if len(m.From.IDs) == 0 {
		return PartyID{}
	}
	return m.From.IDs[0]
}
