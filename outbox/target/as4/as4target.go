// Package as4target is an outbox Target that sends each row as an AS4
// (ebMS 3.0) user message to a trading partner and returns the partner's
// receipt as the proof of delivery.
//
// The row's Topic names the partner; Config.Partners gives its endpoint and
// the ebMS header values. The MessageId is derived from the row's stable id
// (as4client.DeriveMessageID) and the Timestamp is the row's creation time, so a
// resend after a crash or a lost receipt is the same AS4 message, which the
// partner's MSH recognises (txinbox's own endpoint answers it with the
// receipt it stored).
//
//	t, err := as4target.New(as4target.Config{
//		MessageIDDomain: "billing.example.com",
//		Partners: map[string]as4target.Partner{
//			"acme": {
//				URL:     "https://as4.acme.example/as4",
//				From:    ebms.Party{IDs: []ebms.PartyID{{Type: "urn:oasis:names:tc:ebcore:partyid-type:unregistered", ID: "billing"}}},
//				To:      ebms.Party{IDs: []ebms.PartyID{{Type: "urn:oasis:names:tc:ebcore:partyid-type:unregistered", ID: "acme"}}},
//				Service: "urn:example:invoicing", Action: "Submit",
//			},
//		},
//	})
//
// Partner.Security signs and encrypts the messages to a partner and
// verifies its signed receipts (as4client.Security). A partner that
// answers a resend with a notice that it already has the MessageId
// (phase4 does) has the message: the row is delivered, with that notice
// as its receipt (as4client.SendResult.Duplicate).
package as4target

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4client"
	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/outbox"
)

// HeaderConversationID is the outbox row header whose value, when set, is
// the eb:ConversationId; without it the row's MessageID is.
const HeaderConversationID = "as4-conversation-id"

// maxRetryAfter caps the wait a partner's Retry-After asks for, so that a
// wrong header cannot park a row for days.
const maxRetryAfter = time.Hour

// Partner is where and how messages to one trading partner are sent.
type Partner struct {
	// URL is the partner's AS4 endpoint. Required.
	URL string
	// From is our party (eb:From): at least one PartyId. The role defaults
	// to as4client.RoleInitiator.
	From ebms.Party
	// To is the partner (eb:To): at least one PartyId. The role defaults
	// to as4client.RoleResponder.
	To ebms.Party
	// Service and ServiceType are eb:Service and its type attribute;
	// Service is required.
	Service, ServiceType string
	// Action is eb:Action. Required.
	Action string
	// AgreementRef is eb:AgreementRef. Optional.
	AgreementRef as4.AgreementRef
	// Security signs and encrypts the messages to this partner and
	// verifies its signed receipts (see as4client.Security). Defaults to
	// none.
	Security as4client.Security
}

// Config configures a Target.
type Config struct {
	// Partners maps an outbox row's Topic to its partner. At least one is
	// required.
	Partners map[string]Partner
	// MessageIDDomain follows the "@" of every MessageId. Defaults to
	// "txinbox"; set it to a domain of yours, so that MessageIds are
	// unique across senders.
	MessageIDDomain string
	// HTTPClient sends the requests. Defaults to a client of its own; set
	// one for TLS client certificates or a proxy.
	HTTPClient *http.Client
	// Timeout bounds one send, up to the end of the partner's answer.
	// Defaults to as4client.DefaultSendTimeout (1 minute).
	Timeout time.Duration
	// MaxResponseBytes bounds the answer read. Defaults to
	// as4client.DefaultMaxResponseBytes (1 MiB).
	MaxResponseBytes int64
}

// configError is the package's configuration error: a
// *txinbox.ConfigError (errors.As finds it) under the prefix "as4target: ".
func configError(field, msg string) error {
	return fmt.Errorf("as4target: %w", &txinbox.ConfigError{Field: field, Msg: msg})
}

// partner is a configured partner with its client.
type partner struct {
	Partner
	client *as4client.Client
}

// Target sends outbox rows as AS4 user messages. It is safe for
// concurrent use.
type Target struct {
	domain   string
	partners map[string]*partner
}

var _ outbox.Target = (*Target)(nil)

// New returns a Target for cfg; the error wraps a *txinbox.ConfigError naming the
// field.
func New(cfg Config) (*Target, error) {
	if cfg.MessageIDDomain == "" {
		cfg.MessageIDDomain = "txinbox"
	}
	if err := as4client.CheckMessageIDDomain(cfg.MessageIDDomain); err != nil {
		return nil, configError("MessageIDDomain", err.Error())
	}
	switch {
	case cfg.Timeout < 0:
		return nil, configError("Timeout", "must not be negative")
	case cfg.MaxResponseBytes < 0:
		return nil, configError("MaxResponseBytes", "must not be negative")
	}
	if len(cfg.Partners) == 0 {
		return nil, configError("Partners", "at least one partner is required")
	}
	t := &Target{domain: cfg.MessageIDDomain, partners: make(map[string]*partner, len(cfg.Partners))}
	names := make([]string, 0, len(cfg.Partners))
	for name := range cfg.Partners {
		names = append(names, name)
	}
	sort.Strings(names) // the first invalid partner is the same every time
	for _, name := range names {
		p := cfg.Partners[name]
		field := fmt.Sprintf("Partners[%q]", name)
		if err := p.validate(field); err != nil {
			return nil, err
		}
		c, err := as4client.New(as4client.Config{URL: p.URL, HTTPClient: cfg.HTTPClient, Timeout: cfg.Timeout, MaxResponseBytes: cfg.MaxResponseBytes, Security: p.Security})
		var ce *txinbox.ConfigError
		if errors.As(err, &ce) {
			return nil, configError(field+"."+ce.Field, ce.Msg)
		}
		if err != nil {
			return nil, configError(field, err.Error())
		}
		t.partners[name] = &partner{Partner: p, client: c}
	}
	return t, nil
}

func (p *Partner) validate(field string) error {
	switch {
	case p.Service == "":
		return configError(field+".Service", "required")
	case p.Action == "":
		return configError(field+".Action", "required")
	case len(p.From.IDs) == 0 || p.From.IDs[0].ID == "":
		return configError(field+".From", "a PartyId is required")
	case len(p.To.IDs) == 0 || p.To.IDs[0].ID == "":
		return configError(field+".To", "a PartyId is required")
	}
	return nil
}

// Send sends m to the partner named by m.Topic and returns the partner's
// receipt (the SOAP envelope of the receipt signal).
//
// A row for a partner that is not configured, a row the message cannot be
// built from, and a partner's ebMS error of severity failure are
// outbox.Permanent errors (the latter's message names the ebMS error code);
// any other failure (transport, timeout, 5xx, 503 with an ebMS error, an
// answer without receipt) is retryable, wrapped with outbox.RetryAfter
// when the partner sent a Retry-After (at most an hour is honoured).
func (t *Target) Send(ctx context.Context, m *outbox.Message) (outbox.Receipt, error) {
	p, ok := t.partners[m.Topic]
	if !ok {
		return nil, outbox.Permanent(fmt.Errorf("as4target: outbox row %d (%s): no AS4 partner %q is configured", m.ID, m.StableID(), m.Topic))
	}
	out, err := t.outgoing(p, m)
	if err != nil {
		return nil, outbox.Permanent(err)
	}
	res, err := p.client.Send(ctx, out)
	if err != nil {
		err = fmt.Errorf("as4target: outbox row %d (%s) to partner %q: %w", m.ID, m.StableID(), m.Topic, err)
		var se *as4client.SendError
		switch {
		case as4client.IsPermanent(err):
			return nil, outbox.Permanent(err)
		case errors.As(err, &se) && se.RetryAfter > 0:
			return nil, outbox.RetryAfter(err, min(se.RetryAfter, maxRetryAfter))
		}
		return nil, err
	}
	return outbox.Receipt(res.Receipt), nil
}

// outgoing builds the AS4 message of a row; every value that is in the
// message's fingerprint at the receiver comes from the row, so a resend
// is identical.
func (t *Target) outgoing(p *partner, m *outbox.Message) (as4client.Outgoing, error) {
	if m.CreatedAt.IsZero() {
		return as4client.Outgoing{}, fmt.Errorf("as4target: outbox row %d (%s) has no CreatedAt: the AS4 Timestamp must be the same on every resend", m.ID, m.StableID())
	}
	conv := m.HeaderValue(HeaderConversationID)
	if conv == "" {
		conv = m.MessageID
	}
	return as4client.Outgoing{
		MessageID:      as4client.DeriveMessageID(m.StableID(), t.domain),
		Timestamp:      m.CreatedAt,
		From:           p.From,
		To:             p.To,
		Service:        ebms.Service{Type: p.ServiceType, Value: p.Service},
		Action:         p.Action,
		AgreementRef:   p.AgreementRef,
		ConversationID: conv,
		Payloads:       []as4client.Payload{{ContentType: m.ContentType, Data: m.Payload}},
	}, nil
}
