// Package as4 is an AS4 (OASIS ebMS 3.0) receiving endpoint on the
// Transactional Inbox: each user message is stored, and its business effect
// runs, exactly once however often the partner sends it, and every copy
// gets the same receipt.
//
// Handler is an http.Handler. For each POSTed user message (SOAP 1.1 or
// 1.2, bare or multipart/related with cid: payloads) it submits one inbox
// message keyed by edi.AS4Key (the MessageId scoped by the sender's
// PartyId) whose payload hash covers the eb:UserMessage header and every
// payload, and in the inbox transaction stores the message, its payloads
// and the receipt it is about to send (Store), then runs Config.Deliver.
// After the commit it answers:
//
//   - a new message: an ebMS Receipt signal (200), valid against the
//     ebMS 3.0 header schema: a non-repudiation receipt with the request's
//     ds:References for a signed message, else a wrapped copy of the
//     eb:UserMessage;
//   - a duplicate: the original receipt, byte for byte (200), or the
//     same receipt in the duplicate's SOAP version;
//   - the same MessageId with other content (drift): EBMS:0003 (400),
//     recorded in the inbox's drift table;
//   - a failed attempt (database error, Deliver error): EBMS:0004 (503,
//     Retry-After) and no receipt; nothing is registered, so the partner's
//     retry is processed;
//   - a dead-lettered message: EBMS:0004 (500).
//
// Malformed messages get the ebMS error that fits, with a SOAP Fault; the
// envelope's depth and element count, the requests in flight and the
// decompressed size of gzip payloads are limited (Config); with
// Config.Agreements (P-Modes), messages outside them get EBMS:0010;
// receipts and errors posted to the endpoint are acknowledged with an empty
// 200; a PullRequest gets the EBMS:0006 warning. With Config.Security the
// endpoint decrypts and verifies WS-Security (package as4/wssec) before it
// reads the ebMS header, answers failures with EBMS:0101/0102/0103, and
// signs non-repudiation receipts for signed messages; without it a
// wsse:Security header marked mustUnderstand is refused unless
// Config.AcceptUnverifiedSecurity is set. docs/as4.md has the full table.
//
//	driver, _ := pgstore.New(pool, pgstore.Options{})
//	st, _ := as4pg.New(pool, as4pg.Options{})
//	_ = driver.Migrate(ctx)
//	_ = st.Migrate(ctx)
//	h, _ := as4.New(driver, as4.Config[pgx.Tx]{Store: st, Deliver: func(ctx context.Context, tx pgx.Tx, m *as4.Received) error {
//		_, err := tx.Exec(ctx, "INSERT INTO documents (message_id, body) VALUES ($1, $2)", m.UserMessage.MessageID, m.Parts[0].Data)
//		return err
//	}})
//	defer h.Close()
//	http.Handle("/as4", h)
//
// Concurrent posts are grouped into batches by the processor's Submit: one
// transaction commits many messages under load, and the database sees at
// most Inbox.Concurrency transactions whatever the number of connections.
//
// The sending side is package as4/as4client: its Client posts an Outgoing
// user message and returns the partner's receipt, or an error that says
// whether the message may be resent.
package as4
