package cli

import (
	"testing"

	"github.com/txinbox/txinbox/store"
)

// TestHTTPKeysCountsIngressRoutes: status's HTTP keys line counts the
// routes of httpinbox's default scope and of serve's ingress
// ("ingest:NAME"), and no broker's scope.
func TestHTTPKeysCountsIngressRoutes(t *testing.T) {
	scopes := []store.ScopeStats{{Scope: "http:orders", Inbox: 2}, {Scope: "ingest:github", Inbox: 3}, {Scope: "kafka", Inbox: 100},
		{Scope: "httpish", Inbox: 5}}
	total, routes, _ := httpKeys(scopes, func(string) string { return "30d" })
	if routes != 2 || total.Inbox != 5 {
		t.Fatalf("%d keys on %d routes, want 5 on 2 (http:orders and ingest:github)", total.Inbox, routes)
	}
}
