package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/txinbox/txinbox/duration"
	"github.com/txinbox/txinbox/store"
)

// page is what every template gets.
type page struct {
	Title  string
	Prefix string
	// CanAct says whether the admin forms are shown: credentials are
	// configured (the request carries them, or it would not be served).
	CanAct            bool
	CSRF              string
	HasOutbox, HasAS4 bool
	// HasHTTPKeys: the store lists HTTP keys (store.ReplyLister).
	HasHTTPKeys bool
	Data        any
}

var funcs = template.FuncMap{
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"ago": func(d time.Duration) string {
		if d <= 0 {
			return "-"
		}
		return duration.Format(d.Round(time.Second))
	},
	// dur writes a duration as txinbox serve's flags take it: 1d, not 24h0m0s.
	"dur":  duration.Format,
	"hex":  func(b []byte) string { return fmt.Sprintf("%x", b) },
	"px":   func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"path": func(s string) string { return url.PathEscape(s) },
}

// parsePages parses each page template with the layout.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".html")
		if base == "layout" || base == "partials" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials.html", n)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", n, err)
		}
		pages[base] = t
	}
	return pages, nil
}

// render executes a page into a buffer first, so a template error is a
// clean 500 and never half a page.
func (c *console) render(w http.ResponseWriter, r *http.Request, name, title string, data any) {
	c.renderStatus(w, r, http.StatusOK, name, title, data)
}

func (c *console) renderStatus(w http.ResponseWriter, r *http.Request, code int, name, title string, data any) {
	p := page{Title: title, Prefix: c.cfg.Prefix, CanAct: c.cfg.Auth.configured(), Data: data,
		HasOutbox: c.cfg.Outbox != nil, HasAS4: c.cfg.AS4 != nil}
	_, p.HasHTTPKeys = c.cfg.Admin.(store.ReplyLister)
	if p.CanAct {
		p.CSRF = c.csrf.token(r)
	}
	var b bytes.Buffer
	if err := c.pages[name].Execute(&b, p); err != nil {
		c.cfg.Logger.Error("console: rendering a page failed", "page", name, "err", err)
		http.Error(w, "500 internal error: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(b.Bytes()) //nolint:errcheck // the client went away
}

// result is the page an action answers with.
type result struct {
	OK      bool
	Message string
	Back    string // a link back, under the prefix
}

func (c *console) showResult(w http.ResponseWriter, r *http.Request, code int, res result) {
	c.renderStatus(w, r, code, "result", "Result", res)
}

// failed answers a read that failed with a 500 page naming what failed.
func (c *console) failed(w http.ResponseWriter, r *http.Request, what string, err error) {
	c.cfg.Logger.Error("console: "+what, "err", err)
	c.showResult(w, r, http.StatusInternalServerError, result{Message: what + ": " + err.Error(), Back: c.cfg.Prefix})
}
