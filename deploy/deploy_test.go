// Package deploy_test checks the deployment kit: the alert rules and their
// unit tests with promtool, the metric names the rules and the dashboard
// read, the systemd unit with systemd-analyze, the compose file and the
// Dockerfile.
package deploy_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/txinbox/txinbox/metrics/prom"
	"github.com/txinbox/txinbox/metrics/prom/outboxprom"
	"github.com/txinbox/txinbox/outbox"
)

// requireTool returns the tool's path, or skips (fails under CI=true or
// TXINBOX_REQUIRE_<ENV>=1) when it is missing.
func requireTool(t *testing.T, name, env, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := name + " not found (" + install + "): " + err.Error()
	if os.Getenv("CI") == "true" || os.Getenv("TXINBOX_REQUIRE_"+env) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func runTool(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func TestAlertRules(t *testing.T) {
	promtool := requireTool(t, "promtool", "PROMTOOL", "apt-get install prometheus")
	runTool(t, "prometheus", promtool, "check", "rules", "alerts.yml")
	runTool(t, "prometheus", promtool, "test", "rules", "alerts_test.yml")
	runTool(t, "prometheus", promtool, "check", "config", "prometheus.yml")
}

// metricName is a txinbox series name in a rule or a panel.
var metricName = regexp.MustCompile(`\btxinbox_[a-z_]+`)

// TestMetricNamesExist: every txinbox_* series the rules and the dashboard
// read is one txinbox exports, so a renamed metric cannot leave a silent
// alert or an empty panel behind.
func TestMetricNamesExist(t *testing.T) {
	known := exportedNames(t)
	for _, f := range []string{"prometheus/alerts.yml", "grafana/txinbox.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range slices.Compact(slices.Sorted(slices.Values(metricName.FindAllString(string(b), -1)))) {
			base := name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				base = strings.TrimSuffix(base, suffix)
			}
			if !known[base] {
				t.Errorf("%s reads %s, which txinbox does not export", f, name)
			}
		}
	}
}

// exportedNames are the names the metric packages describe, and the
// txinbox_* names spelt out in the module's Go code (txinbox_source_lag).
func exportedNames(t *testing.T) map[string]bool {
	known := map[string]bool{}
	ch := make(chan *prometheus.Desc, 100)
	prom.New(prom.Options{}).Describe(ch)
	prom.NewInboxCollector(nil, prom.InboxOptions{}).Describe(ch)
	outboxprom.New(outboxprom.Options{
		Stats:  func(context.Context) (outbox.Stats, error) { return outbox.Stats{}, nil },
		Health: func() outbox.Health { return outbox.Health{} },
	}).Describe(ch)
	close(ch)
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		if m := fq.FindStringSubmatch(d.String()); m != nil {
			known[m[1]] = true
		}
	}
	if len(known) < 20 {
		t.Fatalf("only %d metrics described: %v", len(known), known)
	}
	literal := regexp.MustCompile(`"(txinbox_[a-z_]+)"`)
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		for _, m := range literal.FindAllStringSubmatch(string(b), -1) {
			known[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return known
}

func TestDashboard(t *testing.T) {
	b, err := os.ReadFile("grafana/txinbox.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string
		Panels []struct {
			Type, Title string
			Targets     []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("grafana/txinbox.json: %v", err)
	}
	graphs := 0
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		graphs++
		if len(p.Targets) == 0 || p.Targets[0].Expr == "" {
			t.Errorf("panel %q has no query", p.Title)
		}
	}
	if dash.UID != "txinbox" || graphs < 15 {
		t.Errorf("uid %q, %d panels: want uid txinbox and at least 15 panels", dash.UID, graphs)
	}
}

// TestSystemdUnit verifies the unit as systemd would load it, with the
// test binary standing in for /usr/local/bin/txinbox (verify requires an
// executable there).
func TestSystemdUnit(t *testing.T) {
	analyze := requireTool(t, "systemd-analyze", "SYSTEMD_ANALYZE", "apt-get install systemd")
	b, err := os.ReadFile("systemd/txinbox.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	for _, want := range []string{"NoNewPrivileges=yes", "ProtectSystem=strict", "DynamicUser=yes", "CapabilityBoundingSet=\n", "SystemCallFilter=@system-service"} {
		if !strings.Contains(unit, want) {
			t.Errorf("the unit lacks %q", want)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "txinbox.service")
	unit = strings.Replace(unit, "ExecStart=/usr/local/bin/txinbox ", "ExecStart="+exe+" ", 1)
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	runTool(t, ".", analyze, "verify", path)
}

// TestCompose: each broker profile has PostgreSQL, the broker and a serve
// built from the Dockerfile; the monitoring profile mounts the kit's files.
func TestCompose(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Profiles []string
			Build    struct{ Dockerfile string }
			Command  []string
			Volumes  []string
			Ports    []string
			Networks map[string]struct{ Aliases []string }
		}
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	if c.Services["postgres"].Profiles != nil {
		t.Error("postgres must run in every profile")
	}
	for _, broker := range []string{"rabbitmq", "kafka"} {
		s, ok := c.Services["serve-"+broker]
		if !ok || !slices.Contains(s.Profiles, broker) || len(s.Command) == 0 || s.Command[0] != "serve" || s.Build.Dockerfile != "deploy/Dockerfile" {
			t.Errorf("serve-%s: %+v", broker, s)
		}
		if !slices.Contains(c.Services[broker].Profiles, broker) {
			t.Errorf("service %s is not in profile %s", broker, broker)
		}
		// Prometheus finds whichever serve runs by this alias.
		if !slices.Contains(s.Networks["default"].Aliases, scrapeAlias(t)) {
			t.Errorf("serve-%s has no network alias %q, which prometheus.yml scrapes", broker, scrapeAlias(t))
		}
	}
	published := map[string]string{} // host port: service
	for name, s := range c.Services {
		for _, p := range s.Ports {
			host, _, _ := strings.Cut(p, ":")
			if other, taken := published[host]; taken {
				t.Errorf("%s and %s both publish host port %s: their profiles cannot run together", other, name, host)
			}
			published[host] = name
		}
	}
	for _, s := range c.Services {
		for _, v := range s.Volumes {
			if src, _, _ := strings.Cut(v, ":"); strings.HasPrefix(src, "./") {
				if _, err := os.Stat(src); err != nil {
					t.Errorf("volume %s: %v", v, err)
				}
			}
		}
	}
}

// TestDockerfile reads the Dockerfile as a reviewer would: a static build,
// an empty base, a user that is not root, and what it builds exists.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	d := string(b)
	for _, want := range []string{"CGO_ENABLED=0 go build", "./cmd/txinbox", "FROM scratch", "USER 65532:65532", "ca-certificates.crt"} {
		if !strings.Contains(d, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
	if _, err := os.Stat("../cmd/txinbox/main.go"); err != nil {
		t.Error(err)
	}
}

// scrapeAlias is the one name prometheus.yml's txinbox job discovers its
// targets by (DNS service discovery): a static list named services that a
// profile does not run, and Prometheus reported them down.
func scrapeAlias(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []any  `yaml:"static_configs"`
			DNSSDConfigs  []struct {
				Names []string
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	for _, sc := range cfg.ScrapeConfigs {
		if sc.JobName == "txinbox" && len(sc.StaticConfigs) == 0 && len(sc.DNSSDConfigs) == 1 && len(sc.DNSSDConfigs[0].Names) == 1 {
			return sc.DNSSDConfigs[0].Names[0]
		}
	}
	t.Fatalf("prometheus.yml: want the txinbox job to find its targets by one name of DNS service discovery: %+v", cfg.ScrapeConfigs)
	return ""
}
