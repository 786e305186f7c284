package as4

import (
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/txinbox/txinbox/edi"
	"github.com/txinbox/txinbox/edi/ebms"
)

// Agreement is the P-Mode of one partner agreement (ebMS 3.0 §D, reduced
// to what this endpoint checks): the parties on both sides and what their
// messages must be. With Config.Agreements set, a message that matches no
// agreement, or breaks the one it matches, is answered EBMS:0010
// ProcessingModeMismatch (EBMS:0103 for a missing signature) and is not
// stored.
type Agreement struct {
	// Name names the agreement in errors and logs. Required.
	Name string `yaml:"name"`
	// AgreementRef, when set, must equal the message's
	// eb:CollaborationInfo/eb:AgreementRef; a message with another or
	// none does not match.
	AgreementRef string `yaml:"agreement_ref"`
	// From is the partner (the sender): one of the message's From
	// PartyIds must equal it, type included. Required.
	From PartyRef `yaml:"from"`
	// To is this endpoint's party: one of the message's To PartyIds must
	// equal it. Required.
	To PartyRef `yaml:"to"`
	// Services are the Service/Action pairs allowed; empty allows any.
	Services []ServiceAction `yaml:"services"`
	// Receipt is "nrr" (non-repudiation receipt, the default: for a
	// signed message) or "plain" (the UserMessage copy even for a signed
	// message).
	Receipt string `yaml:"receipt"`
	// RequireCompression refuses a payload that is not gzip-compressed
	// (eDelivery AS4 compresses every payload).
	RequireCompression bool `yaml:"require_compression"`
	// RequireSignature refuses (EBMS:0103) a message without a signature
	// verified by Config.Security.Verifier; RequireEncryption one that was
	// not decrypted by it or has an attachment that came unencrypted.
	// Either needs Security.Verifier. The trust store and keys are the
	// endpoint's (Config.Security), not per agreement.
	RequireSignature  bool `yaml:"require_signature"`
	RequireEncryption bool `yaml:"require_encryption"`
	// DuplicatesAcrossSenders makes a MessageId unique across all senders
	// of the agreements that set it, as Domibus does: the same MessageId
	// from another From party is then drift (EBMS:0003 ValueInconsistent)
	// instead of another message. Default false: the MessageId is scoped
	// by the sender (the first From PartyId and its type).
	DuplicatesAcrossSenders bool `yaml:"duplicates_across_senders"`
}

// PartyRef is a PartyId with its type ("" for none).
type PartyRef struct {
	ID   string `yaml:"id"`
	Type string `yaml:"type"`
}

// ServiceAction is an allowed eb:Service (with its type) and eb:Action;
// an empty Action allows any action of the service.
type ServiceAction struct {
	Service     string `yaml:"service"`
	ServiceType string `yaml:"service_type"`
	Action      string `yaml:"action"`
}

// The receipt types of an Agreement.
const (
	ReceiptNRR   = "nrr"
	ReceiptPlain = "plain"
)

// ProcessingModeMismatch: the message matches no agreement (P-Mode) of
// the endpoint, or breaks the one it matches.
const ProcessingModeMismatch ErrorCode = "EBMS:0010"

func init() { errorInfo[ProcessingModeMismatch] = [2]string{"ProcessingModeMismatch", "Processing"} }

// LoadAgreements reads agreements from a YAML file: a sequence of
// Agreement mappings, or a mapping with the key "agreements" holding one.
func LoadAgreements(path string) ([]Agreement, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("as4: agreements: %w", err)
	}
	var list []Agreement
	if err := yaml.Unmarshal(b, &list); err != nil {
		var doc struct {
			Agreements []Agreement `yaml:"agreements"`
		}
		if err2 := yaml.Unmarshal(b, &doc); err2 != nil {
			return nil, fmt.Errorf("as4: agreements %s: %w", path, err)
		}
		list = doc.Agreements
	}
	for i := range list {
		if err := list[i].validate(); err != nil {
			return nil, fmt.Errorf("as4: agreements %s, entry %d: %w", path, i+1, err)
		}
	}
	return list, nil
}

func (a *Agreement) validate() error {
	switch {
	case a.Name == "":
		return fmt.Errorf("name is required")
	case a.From.ID == "":
		return fmt.Errorf("agreement %q: from.id is required", a.Name)
	case a.To.ID == "":
		return fmt.Errorf("agreement %q: to.id is required", a.Name)
	case a.Receipt != "" && a.Receipt != ReceiptNRR && a.Receipt != ReceiptPlain:
		return fmt.Errorf("agreement %q: receipt %q is neither %q nor %q", a.Name, a.Receipt, ReceiptNRR, ReceiptPlain)
	}
	for _, s := range a.Services {
		if s.Service == "" {
			return fmt.Errorf("agreement %q: a services entry has no service", a.Name)
		}
	}
	return nil
}

func validateAgreements(as []Agreement) error {
	names := map[string]bool{}
	for i := range as {
		if err := as[i].validate(); err != nil {
			return configError(fmt.Sprintf("Agreements[%d]", i), err.Error())
		}
		if names[as[i].Name] {
			return configError(fmt.Sprintf("Agreements[%d]", i), fmt.Sprintf("name %q is used twice", as[i].Name))
		}
		names[as[i].Name] = true
	}
	return nil
}

func hasParty(p ebms.Party, ref PartyRef) bool {
	for _, id := range p.IDs {
		if id.ID == ref.ID && id.Type == ref.Type {
			return true
		}
	}
	return false
}

// matchAgreement returns the agreement a request falls under: the first
// whose parties (and AgreementRef, if it names one) match. It returns nil
// and no failure when there are no agreements.
func matchAgreement(as []Agreement, r *request) (*Agreement, *failure) {
	if len(as) == 0 {
		return nil, nil
	}
	u := &r.user
	for i := range as {
		a := &as[i]
		if hasParty(u.From, a.From) && hasParty(u.To, a.To) && (a.AgreementRef == "" || a.AgreementRef == u.AgreementRef.Value) {
			return a, a.check(r)
		}
	}
	return nil, senderFailure(ProcessingModeMismatch, fmt.Sprintf("no agreement of this endpoint covers From %s, To %s, AgreementRef %q",
		partyString(u.From), partyString(u.To), u.AgreementRef.Value))
}

// check returns what in the request breaks the agreement.
func (a *Agreement) check(r *request) *failure {
	u := &r.user
	if len(a.Services) > 0 {
		ok := false
		for _, s := range a.Services {
			ok = ok || (s.Service == u.Service.Value && s.ServiceType == u.Service.Type && (s.Action == "" || s.Action == u.Action))
		}
		if !ok {
			return senderFailure(ProcessingModeMismatch, fmt.Sprintf("agreement %q does not allow Service %q (type %q) with Action %q", a.Name, u.Service.Value, u.Service.Type, u.Action))
		}
	}
	if a.RequireCompression {
		for i := range r.parts {
			if !r.parts[i].Compressed {
				return senderFailure(ProcessingModeMismatch, fmt.Sprintf("agreement %q requires compressed payloads; payload %q is not (CompressionType application/gzip)", a.Name, r.parts[i].Info.Href))
			}
		}
	}
	signed := r.security != nil && r.security.Result != nil && r.security.Signed
	if a.RequireSignature && !signed {
		return senderFailure(PolicyNoncompliance, fmt.Sprintf("agreement %q requires signed messages; this one has no signature verified by the endpoint", a.Name))
	}
	if a.RequireEncryption {
		switch {
		case r.security == nil || r.security.Result == nil || !r.security.Encrypted:
			return senderFailure(PolicyNoncompliance, fmt.Sprintf("agreement %q requires encrypted messages; this one has no xenc:EncryptedKey for this endpoint", a.Name))
		case len(r.security.plaintextParts) > 0:
			return senderFailure(PolicyNoncompliance, fmt.Sprintf("agreement %q requires encrypted messages; attachment %q is not encrypted", a.Name, r.security.plaintextParts[0]))
		}
	}
	return nil
}

func partyString(p ebms.Party) string {
	var ids []string
	for _, id := range p.IDs {
		if id.Type != "" {
			ids = append(ids, id.Type+":"+id.ID)
		} else {
			ids = append(ids, id.ID)
		}
	}
	return "[" + strings.Join(ids, " ") + "]"
}

// inboxKey returns the inbox key of a request under its agreement: the
// MessageId scoped by the sender (edi.AS4Key), or, for an agreement with
// DuplicatesAcrossSenders, the MessageId alone.
func inboxKey(a *Agreement, msg *ebms.Message) string {
	if a != nil && a.DuplicatesAcrossSenders {
		return edi.EncodeID(edi.KindAS4, "", "", msg.MessageID)
	}
	return edi.AS4Key(msg).ID
}
