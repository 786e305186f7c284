package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
)

// authenticate returns the actor of r's credentials: the basic-auth user
// name, "token" for a bearer token, or "token:NAME" for the token given as
// a basic-auth password (the name is the client's word, so it is never
// taken for a configured user's). Comparisons take constant time.
func (c *console) authenticate(r *http.Request) (string, bool) {
	a := c.cfg.Auth
	if h := r.Header.Get("Authorization"); a.Token != "" && strings.HasPrefix(h, "Bearer ") {
		return "token", equal(strings.TrimPrefix(h, "Bearer "), a.Token)
	}
	user, pass, ok := r.BasicAuth()
	if !ok || user == "" {
		return "", false
	}
	if want, found := a.Users[user]; found && equal(pass, want) {
		return user, true
	}
	if a.Token != "" && equal(pass, a.Token) {
		return "token:" + user, true
	}
	return "", false
}

// equal compares two secrets in a time that does not depend on where they
// differ (the hashes have the same length whatever the inputs).
func equal(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// csrfKey signs the forms' tokens. It is random per process: a form
// rendered before a restart is refused after it, and asks to reload.
type csrfKey []byte

func newCSRFKey() csrfKey {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}

// token returns the form token bound to the credential that authenticated
// r: another user's token, or one taken without credentials, fails.
func (k csrfKey) token(r *http.Request) string {
	m := hmac.New(sha256.New, k)
	m.Write([]byte("txinbox-console-csrf\x00" + r.Header.Get("Authorization")))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

var crossOrigin = http.NewCrossOriginProtection()

// admin guards an action: credentials must be configured and given, the
// request must come from the console's own origin (Sec-Fetch-Site,
// Origin), and the form must carry the token of that credential. The
// handler gets the actor for the audit table.
func (c *console) admin(h func(w http.ResponseWriter, r *http.Request, actor string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !c.cfg.Auth.configured() {
			c.refuse(w, r, http.StatusForbidden, "the console is read-only: no credentials are configured")
			return
		}
		actor, ok := c.authenticate(r)
		if !ok {
			c.refuse(w, r, http.StatusUnauthorized, "the action needs the console's credentials")
			return
		}
		if err := crossOrigin.Check(r); err != nil {
			c.refuse(w, r, http.StatusForbidden, "a request from another origin is refused: "+err.Error())
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			c.refuse(w, r, http.StatusBadRequest, "unreadable form: "+err.Error())
			return
		}
		if !hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(c.csrf.token(r))) {
			c.refuse(w, r, http.StatusForbidden, "the form's token is missing or stale: reload the page and try again")
			return
		}
		h(w, r, "console:"+actor)
	}
}

// refuse answers a refused action in plain text and logs it.
func (c *console) refuse(w http.ResponseWriter, r *http.Request, code int, why string) {
	c.cfg.Logger.Warn("console: action refused", "method", r.Method, "path", r.URL.Path, "status", code, "why", why)
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="txinbox console", charset="UTF-8"`)
	}
	http.Error(w, http.StatusText(code)+": "+why, code)
}
