package console

import (
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"sync"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// console is the handler New returns.
type console struct {
	cfg   Config
	mux   *http.ServeMux
	pages map[string]*template.Template
	csrf  csrfKey

	timelineMu sync.Mutex
	timeline   timelineCache
}

// New returns the console's handler, serving every page under cfg.Prefix.
// Mount it at that prefix (mux.Handle(cfg.Prefix, h)).
func New(cfg Config) (http.Handler, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &console{cfg: cfg, mux: http.NewServeMux(), pages: pages, csrf: newCSRFKey()}
	c.routes()
	return c, nil
}

func (c *console) routes() {
	p := c.cfg.Prefix
	assets, _ := fs.Sub(assetFS, "assets") // the directory is embedded: cannot fail
	c.mux.Handle("GET "+p+"assets/", http.StripPrefix(p+"assets/", cacheAssets(http.FileServerFS(assets))))
	c.mux.HandleFunc("GET "+p+"{$}", c.overview)
	c.mux.HandleFunc("GET "+p+"dead-letters", c.deadLetters)
	c.mux.HandleFunc("GET "+p+"dead-letters/{id}", c.deadLetter)
	c.mux.HandleFunc("POST "+p+"dead-letters/{id}/{action}", c.admin(c.deadLetterAction))
	c.mux.HandleFunc("POST "+p+"dead-letters", c.admin(c.deadLettersBulk))
	c.mux.HandleFunc("GET "+p+"drift", c.drift)
	c.mux.HandleFunc("GET "+p+"inspect", c.inspect)
	c.mux.HandleFunc("GET "+p+"outbox", c.outbox)
	c.mux.HandleFunc("POST "+p+"outbox/{id}/replay", c.admin(c.outboxReplay))
	c.mux.HandleFunc("GET "+p+"as4", c.as4)
	c.mux.HandleFunc("GET "+p+"http-keys", c.httpKeys)
}

// ServeHTTP sets the security headers, asks for credentials when some are
// configured, and serves the page.
func (c *console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if c.cfg.Auth.configured() {
		if _, ok := c.authenticate(r); !ok {
			h.Set("WWW-Authenticate", `Basic realm="txinbox console", charset="UTF-8"`)
			http.Error(w, "401 unauthorized: the console asks for its credentials", http.StatusUnauthorized)
			return
		}
	}
	c.mux.ServeHTTP(w, r)
}

// cacheAssets lets browsers keep the embedded assets for an hour.
func cacheAssets(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// now is the console's clock.
func now() time.Time { return time.Now().UTC() }
