// Package as4test holds the fixtures that the tests of package as4 and of
// package as4/as4client share: a message to send and the sending side's
// WS-Security for the test partner of package wssectest.
package as4test

import (
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4client"
	"github.com/txinbox/txinbox/as4/wssec"
	"github.com/txinbox/txinbox/as4/wssec/wssectest"
	"github.com/txinbox/txinbox/edi/ebms"
)

// Outgoing returns a message with values that need XML escaping, a text
// payload and a binary one; its MessageID is messageID.
func Outgoing(messageID string) as4client.Outgoing {
	return as4client.Outgoing{
		MessageID:      messageID,
		Timestamp:      time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.FixedZone("CET", 3600)),
		From:           ebms.Party{IDs: []ebms.PartyID{{Type: "urn:test", ID: "sender&co"}}},
		To:             ebms.Party{IDs: []ebms.PartyID{{Type: "urn:test", ID: "receiver"}}, Role: "urn:role:<buyer>"},
		Service:        ebms.Service{Type: "urn:svc-type", Value: "urn:test:invoicing"},
		Action:         `Submit "a" & <b>`,
		ConversationID: "conv-42",
		AgreementRef:   as4.AgreementRef{Value: "urn:agreement:1"},
		Payloads: []as4client.Payload{
			{ContentType: "application/xml; charset=UTF-8", Data: []byte("<Invoice><ID>42</ID></Invoice>")},
			{ContentType: "application/octet-stream", Data: []byte{0, 1, 2, '\r', '\n', '-', '-', 0xff}},
		},
	}
}

// NewClient returns a client for cfg or fails the test.
func NewClient(t testing.TB, cfg as4client.Config) *as4client.Client {
	t.Helper()
	c, err := as4client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// SendError returns err as a *as4client.SendError or fails the test.
func SendError(t testing.TB, err error) *as4client.SendError {
	t.Helper()
	var se *as4client.SendError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T), want a *as4client.SendError", err, err)
	}
	return se
}

// PartnerSecurity is the sending side of the wssectest partner: it signs
// as the partner, encrypts for the receiver and verifies receipts through
// the test roots, or with verifyWithOtherCA through a CA that did not
// issue the receiver's certificate.
func PartnerSecurity(t testing.TB, verifyWithOtherCA bool) as4client.Security {
	t.Helper()
	p := wssectest.Get(t)
	s, err := wssec.NewSigner(p.LeafKey, p.Leaf)
	fatal(t, err)
	x, err := wssec.NewEncrypter(p.Receiver)
	fatal(t, err)
	roots := p.Roots()
	if verifyWithOtherCA {
		roots = x509.NewCertPool()
		roots.AddCert(p.OtherCA)
	}
	v, err := wssec.NewVerifier(wssec.VerifyConfig{Roots: roots})
	fatal(t, err)
	return as4client.Security{Signer: s, Encrypter: x, ReceiptVerifier: v}
}

func fatal(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
