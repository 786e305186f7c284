package as4

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"time"
)

// Store keeps received messages, their payloads and their receipts in the
// inbox's database. as4pg implements it for pgx.Tx (and for *sql.Tx on
// PostgreSQL), as4sqlite and as4my (MySQL, MariaDB) for *sql.Tx.
type Store[TTx any] interface {
	// Save stores a received message, its payloads and its receipt in the
	// inbox transaction tx. A row left for the same key by an earlier
	// message whose inbox row was purged is replaced.
	Save(ctx context.Context, tx TTx, m *Received) error
	// Receipt returns the receipt stored with the message (scope, key),
	// outside any transaction, or ErrNotFound.
	Receipt(ctx context.Context, scope, key string) (StoredReceipt, error)
}

// StoredReceipt is the receipt sent for a message, replayed byte for byte
// to its duplicates.
type StoredReceipt struct {
	MessageID   string
	ContentType string
	Body        []byte
}

// Received is a user message as the endpoint stores it and hands it to
// Config.Deliver.
type Received struct {
	// Scope and Key are the inbox key: Key is edi.AS4Key's ID, the
	// MessageId scoped by the first From PartyId and its type (the
	// MessageId alone under an agreement with DuplicatesAcrossSenders).
	Scope, Key string
	// SOAPVersion is "1.1" or "1.2".
	SOAPVersion string
	// Agreement is the Name of the Config.Agreements entry the message
	// fell under; "" without agreements.
	Agreement   string
	UserMessage UserMessage
	// Parts are the payloads, aligned with UserMessage.PartInfos.
	Parts []Part
	// Fingerprint is what the inbox's payload hash is taken of (see
	// docs/as4.md): the canonical eb:UserMessage and each payload's length
	// and SHA-256, in PartInfo order.
	Fingerprint []byte
	ReceivedAt  time.Time
	// Receipt is the receipt answered for the message.
	Receipt StoredReceipt
}

// Part is one payload of a received message.
type Part struct {
	// Info is the eb:PartInfo that references the payload.
	Info PartInfo
	// ContentID is the MIME part's Content-ID without angle brackets; ""
	// for a payload in the SOAP Body.
	ContentID string
	// ContentType is the MIME part's Content-Type; "" for a payload in the
	// SOAP Body.
	ContentType string
	// Data is the payload after Content-Transfer-Encoding decoding and,
	// for a compressed payload, after gzip decompression. A payload in the
	// SOAP Body is the bytes as they appear in the envelope.
	Data []byte
	// Compressed reports that the payload was sent gzip-compressed
	// (CompressionType application/gzip) and Data is its decompressed
	// content.
	Compressed bool
}

// MimeType returns the payload's media type: the MimeType part property
// (required for a compressed payload), else the MIME part's Content-Type.
func (p *Part) MimeType() string {
	if mt := p.Info.Property("MimeType"); mt != "" {
		return mt
	}
	return p.ContentType
}

// SHA256 returns the SHA-256 of the payload.
func (p *Part) SHA256() [32]byte { return sha256.Sum256(p.Data) }

// fingerprint returns the bytes whose SHA-256 is the inbox payload hash:
// the canonical eb:UserMessage, then the length and SHA-256 of each
// payload in PartInfo order. MIME boundaries, part order and headers, XML
// prefixes and white space, the SOAP version and other header blocks
// (wsse:Security) are not in it: a resend that differs only there is a
// duplicate.
func fingerprint(u *UserMessage, parts []Part) []byte {
	var b bytes.Buffer
	b.WriteString("txinbox-as4-fingerprint/1\n")
	b.WriteString(u.CanonicalXML())
	b.WriteByte('\n')
	for i := range parts {
		fmt.Fprintf(&b, "part %d %d %x\n", i, len(parts[i].Data), parts[i].SHA256())
	}
	return b.Bytes()
}
