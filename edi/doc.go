// Package edi extracts the natural keys of EDI interchanges and AS4
// messages, the message ids a Transactional Inbox deduplicates on.
//
// A partner that re-sends an interchange (after a lost acknowledgement, or
// over another channel) sends the same envelope again; the broker's own ids
// (Kafka offsets, SQS MessageIds) differ, the envelope's do not. Keys reads
// an input, recognises its syntax and returns one Key per unit:
//
//   - EDIFACT: one key per UNB…UNZ interchange: sender id and qualifier,
//     recipient id and qualifier, interchange control reference (0020) and
//     test indicator (0035).
//   - X12: one key per ISA…IEA interchange: ISA05/ISA06, ISA07/ISA08,
//     ISA13 and the usage indicator ISA15.
//   - AS4: one key per message: the ebMS MessageId of the user message,
//     scoped by the first From PartyId and its type. Signal messages
//     (receipts, errors, pull requests) are never inbox items.
//
// Key.ID is the key as one string: the syntax, a colon and the values
// separated by '|', each value percent-escaped so that any value is
// possible and two different tuples never give the same ID (see EncodeID).
// For example:
//
//	edifact:5790000274017|14|5708601000836|14|17|1
//	x12:ZZ|ReceiverID|ZZ|Sender|000000001|P
//	as4:POP000306|urn:fdc:peppol.eu:2017:identifiers:ap|17a7c374-efe3-41e2-ac0d-8a8f47529e47@phase4
//
// Envelopes are checked before a key is returned (UNZ and IEA counts and
// references, AS4 required header elements): a truncated or inconsistent
// interchange is an error, never a key, so it is not marked as processed.
// Inputs are streamed; memory stays bounded whatever their size.
//
// The subpackages edifact, x12 and ebms hold the parsers and their typed
// errors, which name the segment and element (or the XML path) and the
// byte offset of the problem.
package edi
