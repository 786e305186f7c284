package console_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/console"
	"github.com/txinbox/txinbox/console/ediview"
	"github.com/txinbox/txinbox/internal/testkit/sqlitetest"
)

// TestEDIReaderSeam shows a dead letter holding an EDIFACT interchange
// with each EDIReader: none (no key, a notice saying why), ediview.Read
// (the envelope and key of package edi) and one that reads nothing
// (ErrNotEDI's text).
func TestEDIReaderSeam(t *testing.T) {
	ctx := context.Background()
	d := sqlitetest.Open(t)
	p, err := txinbox.NewProcessor[*sql.Tx](d, txinbox.Config[*sql.Tx]{Scope: scope, Logger: quiet(),
		Handler: func(context.Context, *sql.Tx, *txinbox.Message) error {
			return txinbox.Permanent(errors.New("refused"))
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if _, err := p.Process(ctx, []*txinbox.Message{msg("edi", ediSample)}); err != nil {
		t.Fatal(err)
	}
	notEDI := func([]byte) ([]console.EDIKey, error) { return nil, console.ErrNotEDI }
	for _, tc := range []struct {
		name      string
		read      console.EDIReader
		want      []string
		wantNoKey bool
	}{
		{"none", nil, []string{"EDI: not read (no EDI reader is configured)"}, true},
		{"ediview", ediview.Read, []string{`id="edi"`, "edifact", "INV42", "SENDER1", "RECEIVER1", "(ISO-8859-1)"}, false},
		{"not EDI", notEDI, []string{"EDI: not EDIFACT, X12 or AS4"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := console.New(console.Config{Admin: d, EDI: tc.read, Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{"/ui/dead-letters/1", "/ui/inspect?scope=" + scope + "&id=edi"} {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
				b, _ := io.ReadAll(rec.Body)
				body := string(b)
				for _, w := range tc.want {
					if !strings.Contains(body, w) {
						t.Errorf("GET %s lacks %q:\n%s", path, w, body)
					}
				}
				if tc.wantNoKey && strings.Contains(body, `id="edi"`) {
					t.Errorf("GET %s shows an EDI key table without a key read", path)
				}
			}
		})
	}
}
