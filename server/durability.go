package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txinbox/txinbox/store"
)

// DurabilityError is Run's (and CheckDurability's) refusal to start: a
// setting of the database can lose messages txinbox acknowledged.
type DurabilityError struct {
	// Durability is what was read.
	Durability store.Durability
	// Hint says how to accept the risk.
	Hint string
}

// Error is one line per risk (the setting, what it can lose, the fix),
// then what a crash and a failover can lose, then the hint.
func (e *DurabilityError) Error() string {
	lines := []string{"the database can lose messages txinbox acknowledged:"}
	for _, r := range e.Durability.Risks {
		lines = append(lines, "  "+r.String())
	}
	lines = append(lines, "  a crash: "+e.Durability.Crash, "  a failover: "+e.Durability.Failover)
	for _, u := range e.Durability.Unread {
		lines = append(lines, "  not read: "+u)
	}
	return strings.Join(append(lines, e.Hint), "\n")
}

// durabilityState is what the start-up check read.
type durabilityState struct {
	d        store.Durability
	accepted bool
}

// CheckDurability reads Config.Durability's settings and returns a
// *DurabilityError naming each that can lose acknowledged messages (and
// what a crash and a failover can lose), unless Config.AcceptDurabilityRisk,
// which logs each as a warning instead; what could not be read is logged
// as a warning and does not refuse. The result shows in /readyz (check
// "durability"), in txinbox_durability_risk and on the console. Run calls
// it after the retention check. Without Config.Durability it does nothing.
func (s *Server) CheckDurability(ctx context.Context) error {
	if s.cfg.Durability == nil {
		return nil
	}
	step := "reading the database's durability settings"
	s.starting.Store(&step)
	defer s.starting.Store(nil)
	rctx, cancel := context.WithTimeout(ctx, s.cfg.HorizonTimeout)
	defer cancel()
	d, err := s.cfg.Durability.Durability(rctx)
	if err != nil {
		return fmt.Errorf("checking the database's durability: %w", err)
	}
	for _, u := range d.Unread {
		s.cfg.Logger.Warn("txinbox: a durability setting could not be read", "what", u)
	}
	if len(d.Risks) > 0 && !s.cfg.AcceptDurabilityRisk {
		return &DurabilityError{Durability: d, Hint: "fix the settings, or accept the risk with " + s.cfg.AcceptDurabilityRiskName}
	}
	for _, r := range d.Risks {
		s.cfg.Logger.Warn("txinbox: the database can lose acknowledged messages, accepted by "+s.cfg.AcceptDurabilityRiskName,
			"setting", r.Setting, "loses", r.Loses, "fix", r.Fix)
	}
	s.durability.Store(&durabilityState{d: d, accepted: len(d.Risks) > 0})
	s.progress("durability: %s; a crash: %s; a failover: %s", d.Summary(), d.Crash, d.Failover)
	return nil
}

// durabilityCheck is /readyz's "durability" entry: "ok", or the risks
// accepted at start and what could not be read. It never fails the
// readiness: a risk not accepted stops the start instead.
func (s *Server) durabilityCheck() (string, bool) {
	st := s.durability.Load()
	if st == nil {
		return "", false
	}
	if !st.accepted && len(st.d.Unread) == 0 {
		return "ok", true
	}
	var parts []string
	if st.accepted {
		var risks []string
		for _, r := range st.d.Risks {
			risks = append(risks, r.Setting)
		}
		parts = append(parts, "accepted risk ("+s.cfg.AcceptDurabilityRiskName+"): acknowledged messages can be lost: "+strings.Join(risks, ", "))
	}
	if len(st.d.Unread) > 0 {
		parts = append(parts, "not read: "+strings.Join(st.d.Unread, "; "))
	}
	return strings.Join(parts, "; "), true
}

// durabilityCollector exports txinbox_durability_risk{setting}: 1 per
// setting that can lose acknowledged messages, accepted at start (none
// when nothing can), and txinbox_durability_risks, their number, once the
// check ran.
type durabilityCollector struct {
	s           *Server
	risk, risks *prometheus.Desc
}

func newDurabilityCollector(s *Server) durabilityCollector {
	return durabilityCollector{s: s,
		risk: prometheus.NewDesc("txinbox_durability_risk",
			"1 per database setting that can lose acknowledged messages (fsync, full_page_writes, synchronous_commit, "+
				"asynchronous_standby; SQLite: synchronous), accepted at start with --accept-durability-risk.",
			[]string{"setting", "value"}, nil),
		risks: prometheus.NewDesc("txinbox_durability_risks",
			"How many database settings can lose acknowledged messages (read at start; 0: none).", nil, nil)}
}

// Describe implements prometheus.Collector.
func (c durabilityCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.risk
	ch <- c.risks
}

// Collect implements prometheus.Collector.
func (c durabilityCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.durability.Load()
	if st == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.risks, prometheus.GaugeValue, float64(len(st.d.Risks)))
	for _, r := range st.d.Risks {
		ch <- prometheus.MustNewConstMetric(c.risk, prometheus.GaugeValue, 1, r.Name, r.Value)
	}
}
