// Package ebms reads the header of an AS4 (OASIS ebMS 3.0) message and
// returns the user message it carries, or says why it carries none.
//
// Parse accepts a SOAP 1.1 or 1.2 envelope, bare or as the root part of a
// MIME multipart/related package (SOAP with attachments). The content type
// comes from the HTTP Content-Type header; when it is empty, Parse reads
// MIME headers (optionally after an HTTP start line) from the input itself,
// or a bare envelope when the input starts with '<'.
//
// Only the eb:Messaging header block that is a direct child of the SOAP
// Header is read: copies of user messages nested in a Receipt are never
// taken for the message itself. Parsing stops at the end of the SOAP
// Header, so neither the SOAP Body nor the attachments are read into
// memory; MIME parts before the root part are skipped by streaming.
//
// Inputs without an inbox item yield typed errors: *SignalError for Receipt,
// Error and PullRequest signals (errors.Is(err, ErrSignalMessage)),
// *FaultError for a SOAP Fault without eb:Messaging, and *Error with a
// sentinel (ErrNotSOAP, ErrNoMessaging, ErrInvalidHeader, ErrMalformed,
// ErrMIME) and the XML path and byte offset for everything else.
package ebms
