// Package as4client is the sending side of AS4 (OASIS ebMS 3.0): a Client
// posts user messages to a partner's endpoint and waits for the
// synchronous receipt (AS4 reception awareness). Package as4 is the
// receiving side, whose types (as4.UserMessage, as4.Property,
// as4.ErrorCode, ...) this package uses.
//
// Client.Send posts an Outgoing user message (multipart/related, SOAP
// 1.2, payloads as cid: attachments) and returns the partner's receipt,
// or a *SendError that says whether the partner refused the message for
// good (IsPermanent) or it may be resent. DeriveMessageID makes the
// MessageId of a resend the same. Config.Security signs and encrypts the
// messages and verifies the partner's signed receipt; docs/as4.md,
// section Sending, has the details.
package as4client
