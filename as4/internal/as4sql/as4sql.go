// Package as4sql holds what the SQL stores of the AS4 endpoint share: the
// table names, the migration template expansion and the row values.
package as4sql

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/store/schema"
)

// Tables holds the quoted, qualified names of the AS4 tables.
type Tables struct {
	Prefix   string // unquoted, for index names
	Messages string
	Payloads string
}

// NewTables validates schema (may be empty) and prefix and names the
// tables, quoted the standard way ("name"); store names the package in
// errors.
func NewTables(store, schemaName, prefix string) (Tables, error) {
	return newTables(store, schemaName, prefix, `"`)
}

// NewMySQLTables validates prefix and names the tables in the
// connection's database, quoted the MySQL way (`name`).
func NewMySQLTables(store, prefix string) (Tables, error) {
	return newTables(store, "", prefix, "`")
}

func newTables(store, schemaName, prefix, quote string) (Tables, error) {
	if err := schema.ValidateIdent(store+": Options.Schema", schemaName, true); err != nil {
		return Tables{}, err
	}
	if err := schema.ValidateIdent(store+": Options.TablePrefix", prefix, false); err != nil {
		return Tables{}, err
	}
	q := func(name string) string {
		n := quote + prefix + name + quote
		if schemaName != "" {
			n = quote + schemaName + quote + "." + n
		}
		return n
	}
	return Tables{Prefix: prefix, Messages: q("as4_messages"), Payloads: q("as4_payloads")}, nil
}

// Expand replaces {messages}, {payloads} and {prefix} in a SQL template.
func (t Tables) Expand(sql string) string {
	return strings.NewReplacer("{messages}", t.Messages, "{payloads}", t.Payloads, "{prefix}", t.Prefix).Replace(sql)
}

// MessageColumns are the columns of a messages row, in MessageArgs order.
const MessageColumns = `scope, message_key, message_id, ref_to_message_id, sent_at, from_party, from_party_type,
	to_party, to_party_type, service, service_type, action, conversation_id, soap_version, user_message,
	fingerprint, receipt_message_id, receipt_content_type, receipt, received_at`

// PayloadColumns are the columns of a payloads row, in PayloadArgs order.
const PayloadColumns = `scope, message_key, ` + PartColumns

// PartColumns are a payloads row's columns after its message's key, in
// PartArgs order.
const PartColumns = `part_index, href, content_id, content_type, mime_type,
	compression_type, properties, sha256, data`

// Marks returns "?, ?, ..., ?" (n marks), MySQL's placeholders.
func Marks(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

// Placeholders returns "$1, $2, ..., $n".
func Placeholders(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(i))
	}
	return b.String()
}

// MessageArgs returns the values of m's messages row; receivedAt is the
// store's form of m.ReceivedAt.
func MessageArgs(m *as4.Received, receivedAt any) []any {
	u := &m.UserMessage
	from, to := first(u.From.IDs), first(u.To.IDs)
	return []any{
		m.Scope, m.Key, u.MessageID, u.RefToMessageID, u.Timestamp, from.ID, from.Type,
		to.ID, to.Type, u.Service.Value, u.Service.Type, u.Action, u.ConversationID, m.SOAPVersion, u.CanonicalXML(),
		m.Fingerprint, m.Receipt.MessageID, m.Receipt.ContentType, m.Receipt.Body, receivedAt,
	}
}

// PayloadArgs returns the values of the payloads row of m.Parts[i]; the
// properties are a JSON array of {"name", "type", "value"}.
func PayloadArgs(m *as4.Received, i int) []any {
	return append([]any{m.Scope, m.Key}, PartArgs(m, i)...)
}

// PartArgs returns the values of PartColumns for m.Parts[i].
func PartArgs(m *as4.Received, i int) []any {
	p := &m.Parts[i]
	props := p.Info.Properties
	if props == nil {
		props = []as4.Property{}
	}
	pj, _ := json.Marshal(props) // strings always marshal
	sum := p.SHA256()
	return []any{
		i, p.Info.Href, p.ContentID, p.ContentType, p.Info.Property("MimeType"),
		p.Info.Property("CompressionType"), string(pj), sum[:], p.Data,
	}
}

func first(ids []ebms.PartyID) ebms.PartyID {
	if len(ids) == 0 {
		return ebms.PartyID{}
	}
	return ids[0]
}

// ListColumns are the columns of a listing, in Listed field order, for
// payloads rows that carry their message's key.
const ListColumns = listHead + `(SELECT count(*) FROM {payloads} p WHERE p.scope = m.scope AND p.message_key = m.message_key)` + listTail

// ListColumnsByRef are ListColumns for payloads rows that reference their
// message by its id (message_ref, as4my's layout).
const ListColumnsByRef = listHead + `(SELECT count(*) FROM {payloads} p WHERE p.message_ref = m.id)` + listTail

const (
	listHead = `m.scope, m.message_key, m.message_id, m.ref_to_message_id, m.from_party, m.to_party, m.service, m.action,
	m.conversation_id, m.soap_version, `
	listTail = `,
	m.receipt_message_id, m.receipt_content_type, m.receipt`
)

// ListDest returns the scan destinations of ListColumns for l (without
// received_at, whose form the store decides).
func ListDest(l *as4.Listed) []any {
	return []any{&l.Scope, &l.Key, &l.MessageID, &l.RefToID, &l.FromParty, &l.ToParty, &l.Service, &l.Action,
		&l.ConversationID, &l.SOAPVersion, &l.Parts, &l.Receipt.MessageID, &l.Receipt.ContentType, &l.Receipt.Body}
}

// ListLimit is f's limit with its default.
func ListLimit(f as4.ListFilter) int {
	if f.Limit <= 0 {
		return 100
	}
	return f.Limit
}
