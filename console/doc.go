// Package console is txinbox's web console for operators: server-rendered
// pages over an inbox's store (overview, dead letters, drift, inspect, the
// outbox's failed rows, AS4 messages with their receipts, the HTTP keys
// of package httpinbox per route with their stored status and this
// process's replay, conflict and mismatch counts) with the admin
// actions of the CLI (replay and drop a dead letter, one or a filtered
// set; replay a failed outbox row). `txinbox serve` mounts it at /ui/ on
// its --http-listen address; a Go program mounts it on its own mux:
//
//	h, err := console.New(console.Config{
//		Admin:   driver,                       // *pgstore.Driver or *sqlitestore.Driver
//		Outbox:  outboxpg.New(driver),         // optional; outboxlite.New on SQLite
//		AS4:     as4view.Lister(as4Store),     // optional: *as4pg.Store, *as4sqlite.Store, *as4my.Store
//		EDI:     ediview.Read,                 // optional: the payloads' EDI keys
//		Scopes:  []console.Scope{{Name: "invoices", Retention: 7 * 24 * time.Hour}},
//		Sources: []console.Source{{Name: "invoices", Scope: "invoices", Ready: src.Ready, Lag: src.Lag}},
//		Gatherer: registry,                    // optional: this process's outcome counters
//		Auth:    console.Auth{Token: os.Getenv("TXINBOX_CONSOLE_TOKEN")},
//		Logger:  logger,
//	})
//	mux.Handle("/ui/", h)
//
// The AS4 page and the EDI keys of the payloads come through AS4Lister
// and EDIReader, implemented in packages console/as4view and
// console/ediview, so that a program that sets neither links neither the
// AS4 stack nor the EDI parsers.
//
// # Safety
//
// The console is read-only unless credentials are configured (Auth.Token
// or Auth.Users): then every page asks for them (basic auth; a bearer
// token for scripts) and the admin forms appear. Every POST checks the
// credentials, the request's origin (Sec-Fetch-Site and Origin, through
// net/http's CrossOriginProtection) and a form token bound to the
// credential (an HMAC under a key random per process); behind a reverse
// proxy, keep the Host header the browser sent, or the origin check
// refuses the forms. Every action needs a
// reason and is audited like `txinbox forget`: a dead letter's replay is a
// forget in the audit table, its drop a drop-dead-letter, both with the
// user as actor ("console:NAME"); an outbox replay, which has no audit
// table, is logged. Replays follow the CLI's rules (store.ReplayDeadLetter):
// a stale dead letter, whose message was processed all the same, is
// refused, as is one without a message id.
//
// Stored payloads, errors and headers are only ever template text:
// html/template escapes them, so a payload holding <script> is shown, not
// run. The pages use no JavaScript at all, and the Content-Security-Policy
// forbids scripts (default-src 'none', no unsafe-inline), framing
// (frame-ancestors 'none') and posting elsewhere (form-action 'self').
// Assets (one stylesheet) are embedded; nothing is fetched at run time.
//
// # Where the chart's data comes from
//
// The overview draws, per scope and source, the messages per minute of
// the last hour by outcome (processed, dead-lettered, drift) as inline SVG
// rendered on the server. The counts come from the database
// (store.Timeline): inbox rows by received_at, dead letters by
// dead_lettered_at, drift records by detected_at, each read through that
// column's index for the last hour only and grouped per minute. This was
// chosen over an in-process sampler of the Prometheus metrics because the
// database sees every process of a cluster, survives restarts (a sampler
// shows nothing for an hour after one) and needs no goroutine or state in
// the handler. Its limits: duplicates and retries leave no row, so they are
// not in the chart (the overview lists this process's counters from
// Config.Gatherer instead); purged inbox rows no longer count; and the
// query reads every row of the last hour, so its cost grows with the
// hour's volume: about 1.5 s for 1 million rows in the hour (280
// messages/s) on a 2-core test machine. The result is cached for 15
// seconds or ten times as long as the query took, whatever the number of
// viewers, and a query past 5 seconds gives up with a notice on the page
// (above a few million messages an hour, read the chart from Prometheus).
// The current rate is the processed count of the last five
// minutes from the same data.
//
// # Scale
//
// Lists are paged by key, never by OFFSET: a page is the next 50 rows
// below the last id shown (store.ListFilter.Before), which PostgreSQL reads
// by walking the primary key backwards, so the millionth dead letter costs
// what the first does. Listings leave the payloads out
// (ListFilter.OmitPayload); the detail page shows at most 64 KiB of text
// and 8 KiB of hex. A filtered replay or drop handles at most
// Config.BulkLimit dead letters per request.
package console
