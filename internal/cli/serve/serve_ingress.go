package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txinbox/txinbox/effect"
	"github.com/txinbox/txinbox/httpinbox"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/internal/httpfront"
	"github.com/txinbox/txinbox/metrics/prom"
	"github.com/txinbox/txinbox/server"
	"github.com/txinbox/txinbox/store"
	"github.com/txinbox/txinbox/webhooksig"
)

// The webhook ingress: --ingress-listen serves POST /ingest/{name} for each
// --ingress route, each delivery checked for its provider's signature
// (package webhooksig), then taken once per key through package httpinbox,
// with serve's --effect run in the key's transaction. docs/ingress.md.

// IngressScope is the inbox scope prefix of the ingress routes: a route's
// keys are in scope "ingest:NAME".
const IngressScope = "ingest"

// ingressRoute is one --ingress route, as given.
type ingressRoute struct {
	name string
	key  httpinbox.KeyRule
	// keyText is the key= value, for messages.
	keyText string
	// signature is none, github, stripe or hmac (with hmacHeader).
	signature, hmacHeader, encoding, prefix string
	tolerance                               time.Duration
	secretFile, secretEnv                   string
}

var routeName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ingressRoutes is the repeatable --ingress flag.
type ingressRoutes []ingressRoute

func (rs *ingressRoutes) String() string {
	names := make([]string, len(*rs))
	for i, r := range *rs {
		names[i] = r.name
	}
	return strings.Join(names, ",")
}

// Reset empties the list (the environment replaces the file's routes).
func (rs *ingressRoutes) Reset() { *rs = nil }

// Set parses one route: comma-separated key=value settings.
func (rs *ingressRoutes) Set(v string) error {
	r := ingressRoute{keyText: "idempotency-key", signature: "none", encoding: "hex"}
	for item := range strings.SplitSeq(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return fmt.Errorf("%q is not setting=value (settings: name, key, signature, secret-file, secret-env, encoding, prefix, tolerance)", item)
		}
		if err := r.set(k, val); err != nil {
			return err
		}
	}
	if err := r.check(); err != nil {
		return err
	}
	for _, o := range *rs {
		if o.name == r.name {
			return fmt.Errorf("route %q is given twice", r.name)
		}
	}
	*rs = append(*rs, r)
	return nil
}

func (r *ingressRoute) set(k, v string) error {
	var err error
	switch k {
	case "name":
		r.name = v
	case "key":
		r.keyText = v
	case "signature":
		r.signature, r.hmacHeader, _ = strings.Cut(v, ":")
	case "secret-file":
		r.secretFile = v
	case "secret-env":
		r.secretEnv = v
	case "encoding":
		r.encoding = v
	case "prefix":
		r.prefix = v
	case "tolerance":
		r.tolerance, err = time.ParseDuration(v)
	default:
		return fmt.Errorf("unknown setting %q (settings: name, key, signature, secret-file, secret-env, encoding, prefix, tolerance)", k)
	}
	return err
}

func (r *ingressRoute) check() error {
	if !routeName.MatchString(r.name) {
		return fmt.Errorf("name=%q: a route's name is 1 to 64 of a-z, 0-9, _ and - (its path is /ingest/NAME)", r.name)
	}
	switch kind, arg, _ := strings.Cut(r.keyText, ":"); {
	case r.keyText == "idempotency-key":
		r.key = httpinbox.IdempotencyKey()
	case kind == "header" && arg != "":
		r.key = httpinbox.HeaderKey(arg)
	case kind == "json" && arg != "":
		r.key = httpinbox.JSONFieldKey(arg)
	default:
		return fmt.Errorf("route %s: key=%q: want idempotency-key, header:NAME or json:FIELD", r.name, r.keyText)
	}
	switch {
	case r.signature != "none" && r.signature != "github" && r.signature != "stripe" && r.signature != "hmac":
		return fmt.Errorf("route %s: signature=%q: want none, github, stripe or hmac:HEADER", r.name, r.signature)
	case (r.signature == "hmac") != (r.hmacHeader != ""):
		return fmt.Errorf("route %s: the generic signature names its header: signature=hmac:HEADER", r.name)
	case r.encoding != "hex" && r.encoding != "base64":
		return fmt.Errorf("route %s: encoding=%q: want hex or base64", r.name, r.encoding)
	case r.signature != "none" && (r.secretFile == "") == (r.secretEnv == ""):
		return fmt.Errorf("route %s: signature=%s needs its secret: secret-file=PATH or secret-env=VARIABLE (one of them)", r.name, r.signature)
	case r.signature == "none" && (r.secretFile != "" || r.secretEnv != ""):
		return fmt.Errorf("route %s: a secret without a signature scheme: give signature=github, stripe or hmac:HEADER", r.name)
	case r.tolerance < 0:
		return fmt.Errorf("route %s: tolerance must not be negative", r.name)
	}
	return nil
}

// verifier returns the route's signature check; nil for signature=none.
func (r ingressRoute) verifier(getenv func(string) string) (webhooksig.Verifier, error) {
	if r.signature == "none" {
		return nil, nil
	}
	secret := []byte(getenv(r.secretEnv))
	if r.secretFile != "" {
		b, err := os.ReadFile(r.secretFile)
		if err != nil {
			return nil, fmt.Errorf("route %s: secret-file: %w", r.name, err)
		}
		secret = []byte(strings.TrimRight(string(b), "\r\n"))
	}
	if len(secret) == 0 {
		return nil, fmt.Errorf("route %s: the secret is empty", r.name)
	}
	switch r.signature {
	case "github":
		return webhooksig.GitHub{Secret: secret}, nil
	case "stripe":
		return webhooksig.Stripe{Secrets: [][]byte{secret}, Tolerance: r.tolerance}, nil
	}
	return webhooksig.HMAC{Secret: secret, Header: r.hmacHeader, Encoding: webhooksig.Encoding(r.encoding), Prefix: r.prefix}, nil
}

// ingressMetrics are the ingress's counters: its signature refusals,
// and what httpinbox made of the deliveries that passed
// (txinbox_http_requests_total, metrics/prom's).
type ingressMetrics struct {
	refused  *prometheus.CounterVec // signature refusals by route and reason
	requests *prom.HTTPMetrics
}

func newIngressMetrics(reg *prometheus.Registry) (*ingressMetrics, error) {
	m := &ingressMetrics{
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "txinbox_ingress_signature_refused_total",
			Help: "Webhook deliveries refused for their signature (401, nothing stored), by route and reason."}, []string{"route", "reason"}),
		requests: prom.NewHTTP(prom.Options{}),
	}
	for _, c := range []prometheus.Collector{m.refused, m.requests} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// signed refuses a delivery whose signature does not verify with 401 and
// a problem body, counted; nothing reaches the inbox.
func (m *ingressMetrics) signed(route string, v webhooksig.Verifier, next http.Handler) http.Handler {
	if v == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := httpfront.Body(r) // the front read it
		err := v.Verify(r.Header, body)
		if err == nil {
			next.ServeHTTP(w, r)
			return
		}
		reason := "mismatch"
		for _, c := range []struct {
			err  error
			name string
		}{{webhooksig.ErrMissing, "missing"}, {webhooksig.ErrMalformed, "malformed"}, {webhooksig.ErrExpired, "expired"}} {
			if errors.Is(err, c.err) {
				reason = c.name
			}
		}
		m.refused.WithLabelValues(route, reason).Inc()
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("WWW-Authenticate", `Signature realm="`+route+`"`)
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(httpinbox.Problem{ //nolint:errcheck // the client may be gone
			Type:  "https://github.com/txinbox/txinbox/blob/main/docs/ingress.md#bad-signature",
			Title: "The delivery's signature does not verify", Status: http.StatusUnauthorized, Detail: err.Error()})
	})
}

// addIngress builds the ingress's inbox and routes and adds its endpoint
// to srv; the returned func closes the inbox once the server stopped.
func addIngress[TTx any](srv *server.Server, o *serveOptions, env *clikit.Env, driver store.Driver[TTx], eff *effect.Effect[TTx],
	logger *slog.Logger) (func(), error) {
	m, err := newIngressMetrics(srv.Metrics())
	if err != nil {
		return nil, err
	}
	in, err := httpinbox.New(driver, httpinbox.Config[TTx]{Scope: IngressScope, Hooks: srv.RequestHooks(), Observers: []httpinbox.Observer{m.requests}, Logger: logger})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	var scopes []string
	for _, r := range o.Ingress {
		scopes = append(scopes, IngressScope+":"+r.name)
		v, err := r.verifier(env.Getenv)
		if err == nil {
			var h http.Handler
			h, err = in.Handler(httpinbox.Route[TTx]{Name: r.name, Key: r.key, MaxBodyBytes: o.IngressMaxBody,
				Effect: eff.Handler(IngressScope + ":" + r.name)}, nil)
			mux.Handle("POST /ingest/"+r.name, m.signed(r.name, v, h))
		}
		if err != nil {
			in.Close()
			return nil, err
		}
	}
	err = srv.AddEndpoint(server.Endpoint{Name: "ingress", Listen: o.IngressListen, Path: "/ingest/", Handler: mux, Scope: IngressScope, Scopes: scopes,
		ReadHeaderTimeout: o.ReadHeaderTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout, IdleTimeout: o.IdleTimeout,
		Front: o.front(o.IngressMaxBody)})
	if err != nil {
		in.Close()
		return nil, err
	}
	return in.Close, nil
}
