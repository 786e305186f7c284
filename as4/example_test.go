package as4_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/as4/as4sqlite"
	"github.com/txinbox/txinbox/store/sqlitestore"
)

// The endpoint on SQLite: the business effect (Deliver) runs in the
// transaction that stores the message, once; the resend gets the same
// receipt.
func ExampleNew() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "as4-example-")
	defer os.RemoveAll(dir)
	driver, _ := sqlitestore.Open(filepath.Join(dir, "inbox.db"), sqlitestore.Options{})
	defer driver.Close()
	st, _ := as4sqlite.New(driver.DB(), as4sqlite.Options{})
	_ = driver.Migrate(ctx)
	_ = st.Migrate(ctx)

	quiet := slog.New(slog.DiscardHandler)
	h, err := as4.New(driver, as4.Config[*sql.Tx]{
		Store: st,
		Deliver: func(ctx context.Context, tx *sql.Tx, m *as4.Received) error {
			fmt.Printf("delivered %s from %s: %s\n", m.UserMessage.MessageID, m.UserMessage.From.IDs[0].ID, m.Parts[0].Data)
			return nil
		},
		Inbox:  txinbox.Config[*sql.Tx]{Logger: quiet},
		Logger: quiet,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(h)
	defer func() { srv.Close(); h.Close() }()

	for range 2 {
		resp, err := http.Post(srv.URL, "application/soap+xml", strings.NewReader(exampleMessage))
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(resp.Status)
	}
	// Output:
	// delivered invoice-42@partner.example from PARTNER: <Invoice/>
	// 200 OK
	// 200 OK
}

// exampleMessage carries its payload in the SOAP Body (a PartInfo without
// href); payloads as MIME parts are referenced with href="cid:...".
const exampleMessage = `<S12:Envelope xmlns:S12="http://www.w3.org/2003/05/soap-envelope"
    xmlns:eb="http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/">
  <S12:Header><eb:Messaging S12:mustUnderstand="true"><eb:UserMessage>
    <eb:MessageInfo><eb:Timestamp>2026-11-30T10:00:00Z</eb:Timestamp><eb:MessageId>invoice-42@partner.example</eb:MessageId></eb:MessageInfo>
    <eb:PartyInfo>
      <eb:From><eb:PartyId>PARTNER</eb:PartyId><eb:Role>initiator</eb:Role></eb:From>
      <eb:To><eb:PartyId>US</eb:PartyId><eb:Role>responder</eb:Role></eb:To>
    </eb:PartyInfo>
    <eb:CollaborationInfo><eb:Service>invoicing</eb:Service><eb:Action>Submit</eb:Action><eb:ConversationId>42</eb:ConversationId></eb:CollaborationInfo>
    <eb:PayloadInfo><eb:PartInfo/></eb:PayloadInfo>
  </eb:UserMessage></eb:Messaging></S12:Header>
  <S12:Body><Invoice/></S12:Body>
</S12:Envelope>`
