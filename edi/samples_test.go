package edi

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/edi/internal/testsamples"
)

// sampleCase is the decision recorded for one sample file: the key IDs it
// yields, or a substring of the error that refuses it.
type sampleCase struct {
	ids []string
	err string
}

func ids(s ...string) sampleCase    { return sampleCase{ids: s} }
func refused(msg string) sampleCase { return sampleCase{err: msg} }

// sampleCases has one row per file in ../shared/edi/samples/MANIFEST.tsv.
// Comments mark where SPEC.md left a choice or a sample contradicted it.
var sampleCases = map[string]sampleCase{
	// EDIFACT, pydifact.
	"pydifact/invoice1.edi": ids("edifact:01010000253001||O0013000093SCHA-Z59||PAYO0012101221|"),
	// A trailing component separator in a data segment does not touch the envelope.
	"pydifact/invoice_with_colon_at_end.edi": ids("edifact:01010000253001||O0013000093SCHA-Z59||PAYO0012101221|"),
	// No UNZ: truncated interchanges never get a key (SPEC 1.9).
	"pydifact/order.edi":  refused(`edifact: UNZ at byte 367: missing: input ends before the UNZ of interchange "807"`),
	"pydifact/order2.edi": refused(`edifact: UNZ at byte 231: missing: input ends before the UNZ of interchange "000000001"`),
	// UNZ carries the value of 0026, not 0020 (SPEC 1.9): a reference mismatch.
	"pydifact/wikipedia_de.edi": refused(`edifact: UNZ element 0020 at byte 250: interchange control reference "1234567" does not match "1"`),
	"pydifact/wikipedia_en.edi": ids("edifact:6XPPC|ZZ|LHPPC|ZZ|1|"),
	// The ANSI:1 dialect shifts UNB elements (date and time separate): read
	// positionally, 0020 is the time, which the UNZ does not repeat. Refused
	// rather than guessing the dialect (SPEC 1.9 "UNB elements shifted").
	"pydifact/patient1.edi": refused(`edifact: UNZ element 0020 at byte 1178: interchange control reference "1" does not match "1623"`),
	"pydifact/patient2.edi": refused(`edifact: UNZ element 0020 at byte 3298: interchange control reference "1" does not match "0902"`),
	"pydifact/patient3.edi": refused(`edifact: FTX at byte 17659: input ends inside the segment (no segment terminator '): the interchange is truncated`),
	// HL7-like lines without segment terminators between UNB and UNZ.
	"pydifact/hl7.lab": refused("edifact: \"H`Normal\" at byte 43: segment is outside a message"),
	// 362 bytes of proprietary header before the UNA are skipped; the offset is the UNA's.
	"pydifact/sage_coala.ped": ids("edifact:99999999800028|5|9215001|146|20241861032cor|"),
	// UNT counts are wrong in the aperak samples (SPEC 1.9); UNT counts are not
	// checked: they are message-level (CONTRL rejects the message, the
	// interchange was still received) and wrong in too many real files.
	"pydifact/v3__aperak.edi":          ids("edifact:RECEIVERID||SENDERID||000000002|"),
	"pydifact/v4__aperak.edi":          ids("edifact:RECEIVERID||SENDERID||000000005|"),
	"pydifact/v4__aperak_rejected.edi": ids("edifact:RECEIVERID||SENDERID||000000004|"),

	// EDIFACT, StAEDI.
	"staedi/edifact/invoic_d93a_una.edi": ids("edifact:FHPEDAL||HUBERGMBH||9908021557|"),
	"staedi/edifact/invoic_d97b.edi":     ids("edifact:005435656|1|006415160|1|00000000000778|"),
	// Same key, different content (SPEC 1.10): the inbox sees a duplicate;
	// telling a conflicting re-send apart needs a content hash, not the key.
	"staedi/edifact/invoic_d97b_bad.edi": ids("edifact:005435656|1|006415160|1|00000000000778|"),
	// Other separators (UNA=*.? ~) and a release before a non-service
	// character (006?415160): the same key as the default-separator file.
	"staedi/edifact/invoic_d97b_una.edi": ids("edifact:005435656|1|006415160|1|00000000000778|"),
	// Wrapped at 50 and 15 columns, also inside UNB 0020: line breaks that are
	// not service characters are ignored, so the key is the same again.
	"staedi/edifact/wrapped_invoic_d97b.edi":     ids("edifact:005435656|1|006415160|1|00000000000778|"),
	"staedi/edifact/wrapped_invoic_d97b_una.edi": ids("edifact:005435656|1|006415160|1|00000000000778|"),
	// UNG/UNE group; out-of-code-list UNB values (0029=I, 0031=0) are not checked;
	// 0035=1 marks a test interchange.
	"staedi/edifact/orders-with-group.edi":     ids("edifact:5400110000009|14|5013546107732|14|2722166169492|1"),
	"staedi/edifact/empty-segment-example.edi": ids("edifact:1A||KRC||0003|"),
	// UNA5 '*' in syntax version 1 (reserved position used): accepted, not active.
	"staedi/edifact/empty-segment-loop-example.edi": ids("edifact:1A||ONIP||0001|"),
	// Backslash release character.
	"staedi/edifact/pnrgov.edi": ids("edifact:1A||KRC||0003|"),
	// IEA and END inside a message are data.
	"staedi/edifact/other_dialect_term_segments.edi": ids("edifact:005435656|1|006415160|1|00000000000001|"),
	"staedi/edifact/baplie-test.edi":                 ids("edifact:SENDER||RECIPIENT||UNIQUEID1234|"),
	"staedi/edifact/null-pointer-example.edi":        ids("edifact:1A||ONIP||0001|"),

	// X12, StAEDI.
	"staedi/x12/simple997.edi": ids("x12:ZZ|ReceiverID|ZZ|Sender|508121953|P"),
	"staedi/x12/simple997-multiple-interchanges.edi": ids(
		"x12:ZZ|ReceiverID|ZZ|Sender|000000001|P", "x12:ZZ|ReceiverID|ZZ|Sender|000000002|P", "x12:ZZ|ReceiverID|ZZ|Sender|000000003|P"),
	"staedi/x12/empty997.edi": ids("x12:ZZ|ReceiverID|ZZ|Sender|000000001|T"),
	// GE02 is not GS06: group control numbers are checked like the IEA's.
	"staedi/x12/invalid997_min.edi":        refused(`x12: GE element GE02 at byte 240: group control number "<TOO_LONG_AND_NOT_NUMERIC>" does not match "000005"`),
	"staedi/x12/extraDelimiter997.edi":     ids("x12:ZZ|ReceiverID|ZZ|Sender|508121953|P"),
	"staedi/x12/simple999.edi":             ids("x12:ZZ|123456789|ZZ|987654321|000000286|P"),
	"staedi/x12/invoice810_po850_dual.edi": ids("x12:ZZ|SENDERISA|ZZ|RECEIVERISA|000000020|T"),
	"staedi/x12/simple810.edi":             ids("x12:ZZ|SENDERISA|ZZ|RECEIVERISA|000000020|T"),
	// Terminator is the 3-byte UTF-8 '…' (SPEC 2: "byte 105 is 0xE2 only"):
	// the whole UTF-8 character is taken as the terminator.
	"staedi/x12/ts214_ellipses_segterm.edi": ids("x12:ZZ|XXXX|ZZ|DDDDDD|000075776|P"),
	// ISA wrapped at 80 columns (SPEC 2: "positional parse breaks"): line
	// breaks inside the ISA are ignored, so the positional parse holds.
	"staedi/x12/ts210_80char.edi":              ids("x12:ZZ|DDDD|ZZ|XXXXXX|000026003|P"),
	"staedi/x12/multi-tx-transaction-type.edi": ids("x12:ZZ|ALEXANDRE0JACOB|ZZ|ALEXANDRE0JACOB|000001337|T"),
	// Newline as segment terminator, indented segments.
	"staedi/x12/sample837-original.edi":          ids("x12:ZZ|ABCDEFGHIJKLMNO|ZZ|123456789012345|000003438|P"),
	"staedi/x12/sample837-small.edi":             ids("x12:ZZ|ABCDEFGHIJKLMNO|ZZ|123456789012345|000003438|P"),
	"staedi/x12/optionalInterchangeServices.edi": ids("x12:ZZ|ABCDEFGHIJKLMNO|ZZ|123456789012345|000003438|P"),
	// BIN segments are skipped by their declared length (data holds line breaks).
	"staedi/x12/simple_with_binary_segment.edi": ids("x12:ZZ|ReceiverID|ZZ|Sender|508121953|P"),
	"staedi/x12/837-header-ref-only.edi":        ids("x12:ZZ|DATA|ZZ|BRT01|000000001|P"),
	// TA1-only interchange with IEA01=1 although it has no functional group
	// (IEA01 counts groups): the sample wins, IEA01 is checked against the
	// TA1 count when there is no group.
	"staedi/x12/x12_interchange_ack.txt": ids("x12:ZZ|Receiver|ZZ|Sender|000000001|P"),
	"staedi/tradacoms/order.edi":         refused("edi: unknown format: TRADACOMS (STX=) is not supported"),

	// EDIFACT, Smooks.
	// Syntax version 4 with the repetition separator used in data (CUX+3*1).
	"smooks/invoic.txt": ids("edifact:5790000274017|14|5708601000836|14|17|1"),
	"smooks/paxlst.txt": ids("edifact:LOCK|4|CBP-ACE-TEST|4|16|"),
	// Wrong UNT count only (SPEC 1.9): not checked, see the aperak rows.
	"smooks/bad-paxlst.txt": ids("edifact:LOCK|4|CBP-ACE-TEST|4|16|"),
	// Declares UNOA, carries UTF-8 Chinese in data: bytes are never decoded.
	"smooks/recadv.txt":               ids("edifact:512X20101054836182|14|202599214103|14|000002|"),
	"smooks/d96a-invoic-1__input.edi": refused(`edi: unknown format: input starts with segment "BGM" but has no interchange envelope`),

	// AS4, phase4. Keys are from_party|from_party_type|message_id.
	// Raw MIME capture; the root part precedes a binary attachment.
	"phase4/dump-raw.as4out": ids("as4:POP000306|urn:fdc:peppol.eu:2017:identifiers:ap|17a7c374-efe3-41e2-ac0d-8a8f47529e47@phase4"),
	// Content-ID without <> on the attachment: the root is the first part anyway.
	"phase4/WrongCompression.mime": ids("as4:APP_1000000101||c42e883b-aab1-47bf-b2f4-4e89ce309591@ph-as4"),
	// White space around PartyId is trimmed (SPEC calls it significant per the
	// schema; trimmed so re-serialised headers keep their key).
	"phase4/UserMessage12.xml": ids("as4:5209999001264|urn:oasis:names:tc:ebcore:partyid-type:iso6523:0088|2011-921@5209999001264.example.com"),
	// Unclosed eb:Property inside eb:Messaging: malformed XML is refused.
	"phase4/UserMessageWithCompressedPayload12.xml": refused("ebms: /S12:Envelope/S12:Header/eb:Messaging/eb:UserMessage at byte 2417: malformed XML: element <Property> closed by </PartProperties>"),
	"phase4/PullRequest12.xml":                      refused(`PullRequest signal message "msg123@smallco.example.com": signals are not inbox items`),
	// MessageId without '@', Timestamp with an offset and 7 fractional digits.
	"phase4/test-2023-03-15.xml": ids("as4:PDE000556|urn:fdc:peppol.eu:2017:identifiers:ap|49267c79-d822-45d9-aa91-c57b3ca508db"),
	"phase4/UserMessage.xml":     ids("as4:uri:requester.example.com||UUID-1@requester.example.com"),
	// eb:Messaging without a SOAP envelope: the key is defined on the header
	// block of a SOAP Header (SPEC 0), so this is refused.
	"phase4/UserMessage-no-soap.xml":  refused("ebms: /eb:Messaging at byte 666: eb:Messaging is the root element"),
	"phase4/UserMessageResponse.xml":  ids("as4:QRS543|someType|UUID-2@responder.example.com"),
	"phase4/MessageInfoIDMissing.xml": refused("ebms: /S11:Envelope/S11:Header/eb:Messaging/eb:UserMessage/eb:MessageInfo/eb:MessageId at byte 1088: missing"),
	"phase4/MessageInfoMissing.xml":   refused("ebms: /S11:Envelope/S11:Header/eb:Messaging/eb:UserMessage/eb:MessageInfo at byte 1088: missing"),
	// Impossible timestamp 2006-30-30T30:99:99: the timestamp is not part of
	// the key and is not validated.
	"phase4/MessageInfoImaginaryTimestamp.xml": ids("as4:uri:requester.example.com||UUID-1@requester.example.com"),
	"phase4/NoMessaging.xml":                   refused("ebms: /eb:Messaging at byte 720: eb:Messaging is the root element"),
	"phase4/EmptyMessaging.xml":                refused("eb:Messaging has no eb:UserMessage (and no eb:SignalMessage)"),
	// Bundling is not AS4 (SPEC 3.3): refused even though one unit is a user message.
	"phase4/BundledMessage.xml":           refused("eb:Messaging bundles 3 message units (eb:SignalMessage, eb:SignalMessage, eb:UserMessage); AS4 allows exactly one"),
	"phase4/ReceiptMessage.xml":           refused(`Receipt signal message "uiwtoruiopwr2543890@b.example.com" referring to "uiopfdsmnf4898965563434@a.example.com"`),
	"phase4/soap11test__ErrorMessage.xml": refused(`Error signal message "UUID-2@receiver.example.com" (EBMS:0001, 0101)`),
	// The receipt embeds a copy of the user message it acknowledges: only the
	// eb:Messaging directly under the SOAP Header is read.
	"phase4/TestReceipt11.xml":   refused(`Receipt signal message "ph-as4@8e086db6-b26e-4c15-95c5-973f3bedbd96"`),
	"phase4/TestReceipt12.xml":   refused(`Receipt signal message "d36e26c0-5d4d-4950-ad81-dc620681b5f9@phase4"`),
	"phase4/TwoUserMessages.xml": refused("eb:Messaging bundles 2 message units (eb:UserMessage, eb:UserMessage)"),
	// The key is scoped by the From PartyId, which is empty here.
	"phase4/UserMessageNoPartyID.xml":         refused("/eb:UserMessage/eb:PartyInfo/eb:From/eb:PartyId at byte 1134: empty"),
	"phase4/testfiles__ErrorMessage.xml":      refused(`Error signal message "ph-as4@e348b6f9-bea5-422b-972a-90" (EBMS:0001)`),
	"phase4/ErrorMessageNoRefToMessageID.xml": refused(`Error signal message "ph-as4@e348b6f9-bea5-422b-972a-90" (EBMS:0001)`),
	// An Error signal and a SOAP Fault: reported as the signal.
	"phase4/ErrorMessageWithFault.xml": refused(`Error signal message "28a699c5-c7ae-4731-b0b8-ebf3b4bc8477" referring to "1234" (EBMS:0103)`),
	// eb:Messaging after a wsse:Security block, mustUnderstand="false".
	"phase4/TestMimeMessage12.xml": ids("as4:APP_1000000101||UUID-1@requester.example.com"),
	"phase4/from-holodeck-1.xml":   ids("as4:APP_1000000101||1d2726f5-e0f2-4a7d-b984-d073d630df29@PC65063.brzg.local"),
}

func TestSamples(t *testing.T) {
	dir := testsamples.Dir(t)
	names, err := testsamples.Manifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if _, ok := sampleCases[name]; !ok {
			t.Errorf("sample %s has no row in sampleCases: decide its key or its refusal", name)
		}
	}
	for name, want := range sampleCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if !slices.Contains(names, name) {
				t.Fatalf("row for %s, which MANIFEST.tsv does not list", name)
			}
			f, err := os.Open(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			keys, err := Keys(f)
			checkSample(t, keys, err, want)
		})
	}
}

func checkSample(t *testing.T, keys []Key, err error, want sampleCase) {
	t.Helper()
	if want.err != "" {
		if err == nil || !strings.Contains(err.Error(), want.err) {
			t.Errorf("error = %v\nwant one containing %q", err, want.err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Keys: %v", err)
	}
	var got []string
	for _, k := range keys {
		got = append(got, k.ID)
	}
	if !slices.Equal(got, want.ids) {
		t.Errorf("IDs = %q\nwant   %q", got, want.ids)
	}
}
