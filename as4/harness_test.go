package as4_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4pg"
	"github.com/txinbox/txinbox/as4/as4sqlite"
	"github.com/txinbox/txinbox/as4/internal/xsdcheck"
	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/internal/testdb"
	"github.com/txinbox/txinbox/store/pgstore"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"))
}

// options are what a test changes in the endpoint.
type options struct {
	acceptUnverified bool
	maxBody          int64
	// failFirstDelivery makes the first Deliver call fail.
	failFirstDelivery bool
	// maxAttempts is the inbox's MaxAttempts (0: its default).
	maxAttempts int
	// maxConcurrent is MaxConcurrentRequests (0: the default).
	maxConcurrent int
	// maxDecompressed is MaxDecompressedBytes (0: the default).
	maxDecompressed int64
	// maxDecompressedInFlight is MaxDecompressedInFlight (0: the default).
	maxDecompressedInFlight int64
	agreements              []as4.Agreement
	// security is the endpoint's WS-Security configuration.
	security as4.SecurityConfig
	// logger is the endpoint's logger (nil: none).
	logger *slog.Logger
}

// endpoint is a running endpoint over real HTTP and a real database.
type endpoint struct {
	url        string
	deliveries atomic.Int64                 // Deliver calls that succeeded (committed or not)
	delivered  atomic.Pointer[as4.Received] // the last message Deliver got
	count      func(t *testing.T, query string, args ...any) int
	exec       func(t *testing.T, query string, args ...any)
	inFlight   func() int // requests holding a slot (as4.InFlight)
}

func deliver[TTx any](e *endpoint, o options) as4.DeliverFunc[TTx] {
	var failed atomic.Bool
	return func(ctx context.Context, tx TTx, m *as4.Received) error {
		if o.failFirstDelivery && failed.CompareAndSwap(false, true) {
			return errors.New("injected delivery failure")
		}
		e.deliveries.Add(1)
		e.delivered.Store(m)
		return nil
	}
}

func serve[TTx any](t testing.TB, e *endpoint, h *as4.Handler[TTx]) {
	mux := http.NewServeMux()
	mux.Handle("/as4", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); h.Close() })
	e.url = srv.URL + "/as4"
	e.inFlight = func() int { return as4.InFlight(h) }
}

// newPG starts an endpoint on a fresh PostgreSQL schema.
func newPG(t testing.TB, o options) *endpoint {
	t.Helper()
	admin := testdb.Require(t)
	pool := testdb.PoolIn(t, testdb.NewSchema(t, admin), 8)
	ctx := context.Background()
	driver, err := pgstore.New(pool, pgstore.Options{})
	must(t, err)
	must(t, driver.Migrate(ctx))
	st, err := as4pg.New(pool, as4pg.Options{})
	must(t, err)
	must(t, st.Migrate(ctx))
	must(t, st.Migrate(ctx)) // idempotent
	e := &endpoint{
		count: func(t *testing.T, q string, args ...any) int {
			var n int
			must(t, pool.QueryRow(ctx, q, args...).Scan(&n))
			return n
		},
		exec: func(t *testing.T, q string, args ...any) { _, err := pool.Exec(ctx, q, args...); must(t, err) },
	}
	h, err := as4.New(driver, as4.Config[pgx.Tx]{Store: st, Deliver: deliver[pgx.Tx](e, o),
		MaxBodyBytes: o.maxBody, MaxConcurrentRequests: o.maxConcurrent, MaxDecompressedBytes: o.maxDecompressed, MaxDecompressedInFlight: o.maxDecompressedInFlight, Agreements: o.agreements, AcceptUnverifiedSecurity: o.acceptUnverified, Security: o.security, Logger: cmp.Or(o.logger, quiet), Inbox: txinbox.Config[pgx.Tx]{MaxAttempts: o.maxAttempts, Logger: quiet}})
	must(t, err)
	serve(t, e, h)
	return e
}

// newSQLite starts an endpoint on a fresh SQLite file.
func newSQLite(t *testing.T, o options) *endpoint {
	t.Helper()
	ctx := context.Background()
	driver, err := sqlitestore.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlitestore.Options{})
	must(t, err)
	t.Cleanup(func() { driver.Close() })
	must(t, driver.Migrate(ctx))
	st, err := as4sqlite.New(driver.DB(), as4sqlite.Options{})
	must(t, err)
	must(t, st.Migrate(ctx))
	must(t, st.Migrate(ctx))
	db := driver.DB()
	e := &endpoint{
		count: func(t *testing.T, q string, args ...any) int {
			var n int
			must(t, db.QueryRowContext(ctx, q, args...).Scan(&n))
			return n
		},
		exec: func(t *testing.T, q string, args ...any) { _, err := db.ExecContext(ctx, q, args...); must(t, err) },
	}
	h, err := as4.New(driver, as4.Config[*sql.Tx]{Store: st, Deliver: deliver[*sql.Tx](e, o),
		MaxBodyBytes: o.maxBody, MaxConcurrentRequests: o.maxConcurrent, MaxDecompressedBytes: o.maxDecompressed, MaxDecompressedInFlight: o.maxDecompressedInFlight, Agreements: o.agreements, AcceptUnverifiedSecurity: o.acceptUnverified, Security: o.security, Logger: cmp.Or(o.logger, quiet), Inbox: txinbox.Config[*sql.Tx]{MaxAttempts: o.maxAttempts, Logger: quiet}})
	must(t, err)
	serve(t, e, h)
	return e
}

// backends runs fn against PostgreSQL (on pgx, and on database/sql),
// SQLite and MySQL/MariaDB.
func backends(t *testing.T, o options, fn func(t *testing.T, e *endpoint)) {
	t.Run("postgres", func(t *testing.T) { t.Parallel(); fn(t, newPG(t, o)) })
	t.Run("pgdbstore", func(t *testing.T) { t.Parallel(); fn(t, newPGDB(t, o)) })
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); fn(t, newSQLite(t, o)) })
	t.Run("mysql", func(t *testing.T) { t.Parallel(); fn(t, newMySQL(t, o)) })
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// response is an HTTP answer of the endpoint.
type response struct {
	status      int
	contentType string
	retryAfter  string
	body        []byte
}

func post(t testing.TB, url, contentType string, body []byte) response {
	t.Helper()
	resp, err := http.Post(url, contentType, bytes.NewReader(body))
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	r := response{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"), b}
	validateAnswer(t, r)
	return r
}

// validateAnswer checks every SOAP answer of the endpoint against the
// official schemas (see as4/testdata/schemas). It may run in a goroutine,
// so it never skips: without xmllint it only fails when xmllint is
// required.
func validateAnswer(t testing.TB, r response) {
	t.Helper()
	ct := strings.ToLower(r.contentType)
	if len(r.body) == 0 || !(strings.HasPrefix(ct, "application/soap+xml") || strings.HasPrefix(ct, "text/xml")) {
		return
	}
	switch {
	case xsdcheck.Present():
		xsdcheck.Validate(t, fmt.Sprintf("answer (HTTP %d)", r.status), r.body)
	case xsdcheck.Required():
		t.Error("xmllint is required (TXINBOX_REQUIRE_XMLLINT=1 or CI=true) but not on PATH")
	}
}

// signalOf parses an answer as an ebMS signal.
func signalOf(t testing.TB, r response) *ebms.SignalError {
	t.Helper()
	_, err := ebms.Parse(bytes.NewReader(r.body), r.contentType)
	var sig *ebms.SignalError
	if !errors.As(err, &sig) {
		t.Fatalf("answer (%d) is not a signal: %v\n%s", r.status, err, r.body)
	}
	return sig
}

func wantReceipt(t testing.TB, r response, ref string) *ebms.SignalError {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, want 200; body:\n%s", r.status, r.body)
	}
	sig := signalOf(t, r)
	if sig.Signal != "Receipt" || sig.RefToMessageID != ref || sig.MessageID == "" {
		t.Fatalf("got %s ref %q id %q, want a Receipt for %q", sig.Signal, sig.RefToMessageID, sig.MessageID, ref)
	}
	return sig
}

func wantError(t testing.TB, r response, status int, code as4.ErrorCode) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body:\n%s", r.status, status, r.body)
	}
	sig := signalOf(t, r)
	if sig.Signal != "Error" || len(sig.ErrorCodes) != 1 || sig.ErrorCodes[0] != string(code) {
		t.Fatalf("got %s %v, want an Error %s; body:\n%s", sig.Signal, sig.ErrorCodes, code, r.body)
	}
}

// userMessage describes a generated AS4 user message.
type userMessage struct {
	id, from string
	payloads [][]byte
	security string // a header block written before eb:Messaging
	soap11   bool
	// partProperties replaces the eb:Property elements of every PartInfo
	// (default: MimeType application/xml).
	partProperties string
}

func newID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b) + "@test"
}

func (m userMessage) envelope() string {
	ns, p := "http://www.w3.org/2003/05/soap-envelope", "S12"
	if m.soap11 {
		ns, p = "http://schemas.xmlsoap.org/soap/envelope/", "S11"
	}
	var parts strings.Builder
	props := m.partProperties
	if props == "" {
		props = `<eb:Property name="MimeType">application/xml</eb:Property>`
	}
	for i := range m.payloads {
		fmt.Fprintf(&parts, `<eb:PartInfo href="cid:part%d@test"><eb:PartProperties>%s</eb:PartProperties></eb:PartInfo>`, i, props)
	}
	payloadInfo := ""
	if len(m.payloads) > 0 {
		payloadInfo = "<eb:PayloadInfo>" + parts.String() + "</eb:PayloadInfo>"
	}
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<%[1]s:Envelope xmlns:%[1]s="%[2]s" xmlns:eb="http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/">
<%[1]s:Header>%[6]s<eb:Messaging %[1]s:mustUnderstand="true"><eb:UserMessage>
<eb:MessageInfo><eb:Timestamp>2026-11-30T10:00:00.123Z</eb:Timestamp><eb:MessageId>%[3]s</eb:MessageId></eb:MessageInfo>
<eb:PartyInfo><eb:From><eb:PartyId type="urn:test">%[4]s</eb:PartyId><eb:Role>http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/initiator</eb:Role></eb:From>
<eb:To><eb:PartyId type="urn:test">receiver</eb:PartyId><eb:Role>http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/responder</eb:Role></eb:To></eb:PartyInfo>
<eb:CollaborationInfo><eb:Service>urn:test:service</eb:Service><eb:Action>Submit</eb:Action><eb:ConversationId>c1</eb:ConversationId></eb:CollaborationInfo>
%[5]s</eb:UserMessage></eb:Messaging></%[1]s:Header><%[1]s:Body/></%[1]s:Envelope>`, p, ns, m.id, m.from, payloadInfo, m.security)
}

// mime returns the message as multipart/related with a fresh boundary;
// reversed writes the payload parts in reverse order.
func (m userMessage) mime(reversed bool) ([]byte, string) {
	b := make([]byte, 6)
	rand.Read(b)
	boundary := "b-" + hex.EncodeToString(b)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "--%s\r\nContent-Type: application/soap+xml; charset=UTF-8\r\nContent-ID: <root@test>\r\n\r\n%s\r\n", boundary, m.envelope())
	for k := range m.payloads {
		i := k
		if reversed {
			i = len(m.payloads) - 1 - k
		}
		fmt.Fprintf(&buf, "--%s\r\nContent-Type: application/xml\r\nContent-Transfer-Encoding: binary\r\nContent-ID: <part%d@test>\r\n\r\n", boundary, i)
		buf.Write(m.payloads[i])
		buf.WriteString("\r\n")
	}
	fmt.Fprintf(&buf, "--%s--\r\n", boundary)
	ct := fmt.Sprintf(`multipart/related; boundary="%s"; type="application/soap+xml"; start="<root@test>"`, boundary)
	return buf.Bytes(), ct
}

// sample reads a phase4 sample from ../shared/edi/samples, or skips when
// that directory is not there (a clone without it); a sample missing from
// a directory that is there fails the test.
func sample(t testing.TB, name string) []byte {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "edi", "samples")
	if _, err := os.Stat(dir); err != nil {
		t.Skip("EDI samples not found: expected ../shared/edi/samples next to the repository root (they are not part of the module)")
	}
	b, err := os.ReadFile(filepath.Join(dir, "phase4", name))
	if err != nil {
		t.Fatalf("sample %s: %v", name, err)
	}
	return b
}

// quiet discards the endpoint's log lines.
var quiet = slog.New(slog.DiscardHandler)

// base64Lines encodes data as base64 in 76-character lines.
func base64Lines(data []byte) string {
	s := base64.StdEncoding.EncodeToString(data)
	var b strings.Builder
	for len(s) > 76 {
		b.WriteString(s[:76] + "\r\n")
		s = s[76:]
	}
	b.WriteString(s)
	return b.String()
}
