package cli

import (
	"encoding/base64"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/httpinbox"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/internal/cli/serve"
	"github.com/txinbox/txinbox/store"
)

// replyPreview is how many bytes of a stored body inspect shows.
const replyPreview = 512

// replyJSON is inspect's view of an inbox row's reply: the stored HTTP
// response (status, header fields, body size and its first bytes), or
// only its size when it is not an HTTP response.
func replyJSON(b []byte) map[string]any {
	rs, err := httpinbox.ParseStoredResponse(b)
	if err != nil {
		return map[string]any{"bytes": len(b)}
	}
	body := rs.Body[:min(len(rs.Body), replyPreview)]
	out := map[string]any{"status": rs.Status, "headers": rs.Header, "body_bytes": len(rs.Body),
		"body_truncated": len(body) < len(rs.Body)}
	if utf8.Valid(body) {
		out["body_preview"] = string(body)
	} else {
		out["body_preview_base64"] = base64.StdEncoding.EncodeToString(body)
	}
	return out
}

// isHTTPScope says whether a scope holds HTTP keys: httpinbox's scopes
// are its Config.Scope, ":" and the route's name; the scopes txinbox's
// own HTTP inboxes use are httpinbox.DefaultScope and serve's ingress
// (serve.IngressScope).
func isHTTPScope(scope string) bool {
	return strings.HasPrefix(scope, httpinbox.DefaultScope+":") || strings.HasPrefix(scope, serve.IngressScope+":")
}

// httpKeys sums the scopes of HTTP keys and gives their retention (the
// routes' retentions, comma-separated, when they differ).
func httpKeys(scopes []store.ScopeStats, retentionOf func(string) string) (t store.ScopeStats, routes int, retention string) {
	var rets []string
	for _, x := range scopes {
		if !isHTTPScope(x.Scope) {
			continue
		}
		routes++
		if r := retentionOf(x.Scope); !slices.Contains(rets, r) {
			rets = append(rets, r)
		}
		t.Inbox += x.Inbox
		t.Expired += x.Expired
		if !x.OldestInbox.IsZero() && (t.OldestInbox.IsZero() || x.OldestInbox.Before(t.OldestInbox)) {
			t.OldestInbox = x.OldestInbox
		}
	}
	return t, routes, strings.Join(rets, ", ")
}

// printHTTPKeys prints status's line of HTTP keys, if any route has some.
func printHTTPKeys(w io.Writer, scopes []store.ScopeStats, retentionOf func(string) string) {
	t, routes, retention := httpKeys(scopes, retentionOf)
	if routes == 0 {
		return
	}
	oldest := ""
	if !t.OldestInbox.IsZero() {
		oldest = fmt.Sprintf(", oldest %s ago", duration.Format(time.Since(t.OldestInbox).Round(time.Second)))
	}
	fmt.Fprintf(w, "HTTP keys (httpinbox)\t%d on %d routes (%d expired%s; kept %s: a key's expiry is the inbox's retention)\n",
		t.Inbox, routes, t.Expired, oldest, retention)
}

// httpKeysJSON is status --json's "http_keys".
func httpKeysJSON(scopes []store.ScopeStats, retentionOf func(string) string) map[string]any {
	t, routes, retention := httpKeys(scopes, retentionOf)
	return map[string]any{"keys": t.Inbox, "routes": routes, "expired": t.Expired,
		"oldest": clikit.TimeOrNil(t.OldestInbox), "retention": retention}
}
