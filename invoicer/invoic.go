// Package invoicer is the seed's EDI invoicer: it turns InvoiceIssued events
// into UN/EDIFACT INVOIC D.96A interchanges for trading partners, with the
// Transactional Inbox on the consuming side and the outbox on the sending
// side.
//
// Its inbox handler, in ONE inbox transaction, draws the UNB interchange
// control reference from the database (a PostgreSQL SEQUENCE, or a counter
// row in SQLite), builds the INVOIC, records a partner_invoices row and adds
// the outbox row (Topic = the partner's name, ContentType
// application/EDIFACT) that a relay later sends over AS4. A redelivered
// event is dropped by the inbox before the handler runs, so no second
// control reference and no second INVOIC are ever produced for one
// invoice. docs/invoicer.md describes the scenario and the demo.
package invoicer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/txinbox/txinbox/edi/edifact"
)

// EventType is the Type of an InvoiceIssued event.
const EventType = "InvoiceIssued"

// ContentType is the content type of the outbox rows: an EDIFACT
// interchange (RFC 1767).
const ContentType = "application/EDIFACT"

// InvoiceIssued is the event the invoicer consumes, as JSON.
type InvoiceIssued struct {
	// Type is always "InvoiceIssued".
	Type string `json:"type"`
	// InvoiceID is the invoice number (BGM 1004). Required, at most 35
	// characters.
	InvoiceID string `json:"invoice_id"`
	// Partner names the trading partner (the buyer): the key of the
	// handler's partner table, the outbox row's Topic and the AS4
	// target's partner. Required.
	Partner string `json:"partner"`
	// IssuedAt is the invoice date (DTM+137) and the UNB's date and time of
	// preparation. Required.
	IssuedAt time.Time `json:"issued_at"`
	// Currency is the ISO 4217 code (CUX). Defaults to EUR.
	Currency string `json:"currency,omitempty"`
	// Lines are the invoice lines; at least one.
	Lines []Line `json:"lines"`
	// Run tags the events of one demo run; free text, may be empty.
	Run string `json:"run,omitempty"`
}

// Line is one invoice line.
type Line struct {
	// SKU is the supplier's article number (LIN, PIA). Required.
	SKU string `json:"sku"`
	// Description is the item description (IMD). Optional.
	Description string `json:"description,omitempty"`
	// Quantity is the invoiced quantity (QTY+47). At least 1.
	Quantity int64 `json:"quantity"`
	// UnitPriceCents is the net unit price in cents (PRI+AAA). Not
	// negative.
	UnitPriceCents int64 `json:"unit_price_cents"`
}

// AmountCents is the line amount: quantity times unit price.
func (l Line) AmountCents() int64 { return l.Quantity * l.UnitPriceCents }

// TotalCents is the invoice total: the sum of the line amounts.
func (e *InvoiceIssued) TotalCents() int64 {
	var t int64
	for _, l := range e.Lines {
		t += l.AmountCents()
	}
	return t
}

// Validate reports the first field of e that cannot make an INVOIC, by
// its JSON name.
func (e *InvoiceIssued) Validate() error {
	switch {
	case e.Type != EventType:
		return fmt.Errorf("type is %q, want %q", e.Type, EventType)
	case e.InvoiceID == "" || len(e.InvoiceID) > 35:
		return fmt.Errorf("invoice_id %q must have 1 to 35 characters", e.InvoiceID)
	case e.Partner == "":
		return fmt.Errorf("partner is required")
	case e.IssuedAt.IsZero():
		return fmt.Errorf("issued_at is required")
	case len(e.Lines) == 0:
		return fmt.Errorf("lines: an invoice needs at least one line")
	case e.Currency != "" && len(e.Currency) != 3:
		return fmt.Errorf("currency %q is not a three-letter ISO 4217 code", e.Currency)
	}
	for i, l := range e.Lines {
		switch {
		case l.SKU == "":
			return fmt.Errorf("lines[%d].sku is required", i)
		case l.Quantity < 1 || l.Quantity > 1e9:
			return fmt.Errorf("lines[%d].quantity %d must be between 1 and 1e9", i, l.Quantity)
		case l.UnitPriceCents < 0 || l.UnitPriceCents > 1e12:
			return fmt.Errorf("lines[%d].unit_price_cents %d must be between 0 and 1e12", i, l.UnitPriceCents)
		}
	}
	return nil
}

// ParseEvent decodes and validates an InvoiceIssued event. Unknown fields
// are allowed (events grow); a missing or bad required field is an error
// naming it.
func ParseEvent(payload []byte) (*InvoiceIssued, error) {
	var e InvoiceIssued
	if err := json.Unmarshal(payload, &e); err != nil {
		return nil, fmt.Errorf("InvoiceIssued event is not valid JSON: %w", err)
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("InvoiceIssued event %q: %w", e.InvoiceID, err)
	}
	return &e, nil
}

// BuildINVOIC returns the EDIFACT interchange (syntax UNOC version 3) that
// carries e as one INVOIC D.96A message: UNA, UNB with sender, recipient,
// e.IssuedAt (UTC) as date and time of preparation and unbRef as the
// interchange control reference, then UNH, BGM+380, DTM+137, NAD+SU,
// NAD+BY, CUX, the lines (LIN, IMD, QTY+47, MOA+203, PRI+AAA), UNS, CNT,
// MOA+79 and MOA+86, UNT with the segment count, and UNZ+1 with unbRef
// again. The result depends on its arguments only, so a resend of the
// stored interchange is byte for byte the same.
func BuildINVOIC(e *InvoiceIssued, unbRef string, sender, recipient edifact.Party) ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	w := edifact.NewWriter(&b, edifact.DefaultSeparators)
	at := e.IssuedAt.UTC()
	currency := e.Currency
	if currency == "" {
		currency = "EUR"
	}
	w.BeginInterchange(edifact.Header{Syntax: "UNOC", Version: "3", Sender: sender, Recipient: recipient, //nolint:errcheck // sticky: checked at the end
		Date: at.Format("060102"), Time: at.Format("1504"), ControlRef: unbRef})
	w.BeginMessage("1", edifact.Element{"INVOIC", "D", "96A", "UN"})           //nolint:errcheck // sticky
	seg := func(tag string, els ...edifact.Element) { w.Segment(tag, els...) } //nolint:errcheck // sticky
	seg("BGM", edifact.Element{"380"}, edifact.Element{e.InvoiceID}, edifact.Element{"9"})
	seg("DTM", edifact.Element{"137", at.Format("20060102"), "102"})
	seg("NAD", edifact.Element{"SU"}, edifact.Element{sender.ID, "", "9"})
	seg("NAD", edifact.Element{"BY"}, edifact.Element{recipient.ID, "", "9"})
	seg("CUX", edifact.Element{"2", currency, "4"})
	for i, l := range e.Lines {
		seg("LIN", edifact.Element{strconv.Itoa(i + 1)}, nil, edifact.Element{l.SKU, "SA"})
		if l.Description != "" {
			seg("IMD", edifact.Element{"F"}, nil, edifact.Element{"", "", "", l.Description})
		}
		seg("QTY", edifact.Element{"47", strconv.FormatInt(l.Quantity, 10)})
		seg("MOA", edifact.Element{"203", decimal(l.AmountCents())})
		seg("PRI", edifact.Element{"AAA", decimal(l.UnitPriceCents)})
	}
	seg("UNS", edifact.Element{"S"})
	seg("CNT", edifact.Element{"2", strconv.Itoa(len(e.Lines))})
	seg("MOA", edifact.Element{"79", decimal(e.TotalCents())})
	seg("MOA", edifact.Element{"86", decimal(e.TotalCents())})
	w.EndMessage()     //nolint:errcheck // sticky
	w.EndInterchange() //nolint:errcheck // sticky
	if err := w.Err(); err != nil {
		return nil, fmt.Errorf("invoice %s: %w", e.InvoiceID, err)
	}
	return b.Bytes(), nil
}

// decimal formats cents as an EDIFACT amount with '.' as decimal mark.
func decimal(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100)
}
