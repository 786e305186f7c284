package as4view_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/txinbox/txinbox/as4"
	"github.com/txinbox/txinbox/console"
	"github.com/txinbox/txinbox/console/as4view"
)

// fakeLister returns rows and keeps the filter it was given.
type fakeLister struct {
	got  as4.ListFilter
	rows []as4.Listed
}

func (f *fakeLister) ListMessages(_ context.Context, lf as4.ListFilter) ([]as4.Listed, error) {
	f.got = lf
	return f.rows, nil
}

// TestLister passes the filter through and every field back.
func TestLister(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	f := &fakeLister{rows: []as4.Listed{{Scope: "as4", Key: "k", MessageID: "m", RefToID: "r",
		FromParty: "A", ToParty: "B", Service: "s", Action: "a", ConversationID: "c", SOAPVersion: "1.2",
		Parts: 2, ReceivedAt: at, Receipt: as4.StoredReceipt{MessageID: "rm", ContentType: "ct", Body: []byte("<R/>")}}}}
	before := at.Add(time.Hour)
	got, err := as4view.Lister(f).ListAS4(context.Background(), console.AS4Filter{Scope: "as4", Before: before, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if want := (as4.ListFilter{Scope: "as4", Before: before, Limit: 50}); f.got != want {
		t.Errorf("filter = %+v, want %+v", f.got, want)
	}
	want := []console.AS4Message{{Scope: "as4", Key: "k", MessageID: "m", RefToID: "r",
		FromParty: "A", ToParty: "B", Service: "s", Action: "a", ConversationID: "c", SOAPVersion: "1.2",
		Parts: 2, ReceivedAt: at, Receipt: console.AS4Receipt{MessageID: "rm", ContentType: "ct", Body: []byte("<R/>")}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ListAS4 = %+v,\nwant %+v", got, want)
	}
}
