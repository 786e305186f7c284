package storetest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store"
)

// driftStep is one ProcessCheckpoint (or, without positions, Process)
// call of testDriftRuleAgrees and the outcomes the drift rule gives it.
type driftStep struct {
	what string
	msgs []*txinbox.Message
	// positions are the messages' offsets; none: no checkpoint.
	positions []int64
	want      []txinbox.Outcome
}

// driftSteps are the inputs: new, duplicate (same hash), drift (same id,
// another hash), dead-lettered with its own and with another payload,
// repeats within a batch, with a checkpoint and without. Before them,
// dup and drift were processed with payload A, dl-same and dl-other
// dead-lettered with payload D (driftSetup).
func driftSteps() []driftStep {
	P, Du, Dr, DL := txinbox.Processed, txinbox.Duplicate, txinbox.Drift, txinbox.DeadLettered
	return []driftStep{
		// With a checkpoint and no repeat: the SQL effect commits on its
		// own and records the drift in its statement (pgstore's driftTail).
		{"checkpoint", []*txinbox.Message{msg("new-1", "N"), msg("dup", "A"), msg("drift", "B"), msg("dl-same", "D"), msg("dl-other", "E")},
			[]int64{1, 2, 3, 4, 5}, []txinbox.Outcome{P, Du, Dr, DL, Dr}},
		// Repeats with a checkpoint: a transaction, classified in Go.
		{"repeats with a checkpoint", []*txinbox.Message{msg("rep", "R"), msg("rep", "R"), msg("rep", "S"), msg("new-2", "N")},
			[]int64{6, 7, 8, 9}, []txinbox.Outcome{P, Du, Dr, P}},
		// No checkpoint: committed on its own, the drift recorded after.
		{"no checkpoint", []*txinbox.Message{msg("dup", "A"), msg("drift", "C"), msg("new-3", "N"), msg("dl-other", "F")},
			nil, []txinbox.Outcome{Du, Dr, P, Dr}},
		// A checkpoint over keys that are all known.
		{"all known with a checkpoint", []*txinbox.Message{msg("new-1", "N"), msg("drift", "B"), msg("rep", "S"), msg("dl-same", "D")},
			[]int64{10, 11, 12, 13}, []txinbox.Outcome{Du, Dr, Dr, DL}},
	}
}

// driftWant is the drift the steps record: id, stored and received
// payload.
var driftWant = [][3]string{{"dl-other", "D", "E"}, {"dl-other", "D", "F"}, {"drift", "A", "B"}, {"drift", "A", "B"}, {"drift", "A", "C"},
	{"rep", "R", "S"}, {"rep", "R", "S"}}

// driftRun is what one path recorded over the steps.
type driftRun struct {
	outcomes   [][]txinbox.Outcome
	drift      []string
	effects    map[string]int
	dead       []string
	checkpoint map[int32]int64
}

// testDriftRuleAgrees: the drift rule is written twice, in Go (the
// processor's classify after a claim) and in SQL (pgstore's driftTail,
// when a declarative effect's claim commits with a checkpoint). Over the
// same inputs, the effect given as SQL (Harness.EffectStatement) and the
// one given as a Go handler must give the same outcomes and record the
// same drift rows, effects, dead letters and checkpoint. A store without
// declarative effects runs the Go path only, against the same
// expectations.
func testDriftRuleAgrees[TTx any](f *fixture[TTx]) {
	paths := []string{"go"}
	if f.h.EffectStatement != "" {
		paths = append(paths, "sql")
	} else if ec, ok := f.d.(store.EffectChecker); ok {
		if joins, err := ec.JoinsEffects(f.ctx); err == nil && joins {
			f.t.Error("the store runs declarative effects (store.EffectChecker) but the harness gives no EffectStatement")
		}
	}
	runs := map[string]driftRun{}
	for _, path := range paths {
		f.t.Run(path, func(t *testing.T) {
			runs[path] = runDriftSteps(newFixture(t, f.h), path == "sql")
		})
	}
	goRun, ok := runs["go"]
	if !ok {
		return
	}
	if sqlRun, ok := runs["sql"]; ok {
		goRun.compare(f.t, sqlRun)
	}
}

// runDriftSteps runs driftSetup and driftSteps on a fresh inbox, the
// steps' effect given as SQL or as a Go handler, checks the outcomes and
// what is recorded against the rule's, and returns what it found.
func runDriftSteps[TTx any](g *fixture[TTx], sql bool) driftRun {
	driftSetup(g)
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	cfg := txinbox.Config[TTx]{Now: func() time.Time { return now }}
	if sql {
		cfg.Effect = &txinbox.Effect{Statements: []string{g.h.EffectStatement}}
	}
	p := g.effectProcessor(cfg)
	var run driftRun
	for _, s := range driftSteps() {
		var res []txinbox.Result
		var err error
		if s.positions == nil {
			res, err = p.Process(g.ctx, s.msgs)
		} else {
			res, err = p.ProcessCheckpoint(g.ctx, s.msgs, txinbox.Checkpoint{Source: "invoices", Partition: 7, Positions: s.positions})
		}
		if err != nil {
			g.t.Fatalf("%s: %v", s.what, err)
		}
		var got []txinbox.Outcome
		for _, r := range res {
			got = append(got, r.Outcome)
		}
		if !slices.Equal(got, s.want) {
			g.t.Errorf("%s: outcomes %v, want %v", s.what, got, s.want)
		}
		run.outcomes = append(run.outcomes, got)
	}
	recorded(g, &run, now)
	return run
}

// driftSetup processes dup and drift (payload A) and dead-letters dl-same
// and dl-other (payload D) with a Go handler.
func driftSetup[TTx any](g *fixture[TTx]) {
	p := g.processor(txinbox.Config[TTx]{}, func(m *txinbox.Message) error {
		if strings.HasPrefix(m.ID, "dl-") {
			return txinbox.Permanent(errBoom)
		}
		return nil
	})
	wantOutcomes(g.t, g.process(p, msg("dup", "A"), msg("drift", "A"), msg("dl-same", "D"), msg("dl-other", "D")),
		txinbox.Processed, txinbox.Processed, txinbox.DeadLettered, txinbox.DeadLettered)
}

// effectProcessor is processor with cfg's effect as it is: a declarative
// Effect, or the suite's handler.
func (f *fixture[TTx]) effectProcessor(cfg txinbox.Config[TTx]) *txinbox.Processor[TTx] {
	if cfg.Effect == nil {
		return f.processor(cfg, nil)
	}
	cfg.Scope, cfg.Logger = scope, quiet()
	p, err := txinbox.NewProcessor(f.d, cfg)
	if err != nil {
		f.t.Fatalf("NewProcessor: %v", err)
	}
	f.t.Cleanup(p.Close)
	return p
}

// recorded reads what the inbox holds after the steps into run and
// checks it against the rule's: driftWant detected at now, one effect per
// new key, the two dead letters, the checkpoint at the last position.
func recorded[TTx any](g *fixture[TTx], run *driftRun, now time.Time) {
	t := g.t
	admin := g.d.(store.Admin)
	drift, err := admin.ListDrift(g.ctx, store.ListFilter{Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, w := range driftWant {
		want = append(want, fmt.Sprintf("%s %x>%x", w[0], hashOf(w[1])[:4], hashOf(w[2])[:4]))
	}
	var got []string
	for _, d := range drift {
		got = append(got, fmt.Sprintf("%s %x>%x", d.MessageID, d.StoredHash[:min(4, len(d.StoredHash))], d.ReceivedHash[:min(4, len(d.ReceivedHash))]))
		run.drift = append(run.drift, fmt.Sprintf("%s %s %s %x %x %s", d.MessageID, d.Source, d.SourcePosition, d.StoredHash, d.ReceivedHash,
			d.DetectedAt.UTC().Format(time.RFC3339Nano)))
		if d.Source != "invoices" || d.SourcePosition != "0:"+d.MessageID || !d.DetectedAt.Equal(now) || !bytes.Equal(d.StoredHash, hashOfStored(d.MessageID)) {
			t.Errorf("drift row %+v: want source invoices, position 0:%s, detected at %s", d.DriftRow, d.MessageID, now)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	slices.Sort(run.drift)
	if !slices.Equal(got, want) {
		t.Errorf("drift rows (id stored>received):\n%v\nwant\n%v", got, want)
	}
	run.effects = g.effects()
	wantEffects := map[string]int{scope + "/dup": 1, scope + "/drift": 1, scope + "/new-1": 1, scope + "/new-2": 1, scope + "/new-3": 1, scope + "/rep": 1}
	if !mapsEqual(run.effects, wantEffects) {
		t.Errorf("effects %v, want %v", run.effects, wantEffects)
	}
	dls, err := admin.ListDeadLetters(g.ctx, store.ListFilter{Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dls {
		run.dead = append(run.dead, fmt.Sprintf("%s %x %d", d.MessageID, d.PayloadHash, d.Attempts))
	}
	slices.Sort(run.dead)
	if len(run.dead) != 2 {
		t.Errorf("dead letters %v, want dl-other and dl-same", run.dead)
	}
	if run.checkpoint, err = g.d.Checkpoints(g.ctx, scope, "invoices"); err != nil {
		t.Fatal(err)
	}
	if run.checkpoint[7] != 13 || len(run.checkpoint) != 1 {
		t.Errorf("checkpoints %v, want partition 7 at 13", run.checkpoint)
	}
}

// hashOfStored is the payload hash the inbox or the dead letters hold for
// an id of driftSetup and driftSteps.
func hashOfStored(id string) []byte {
	switch id {
	case "dup", "drift":
		return hashOf("A")
	case "rep":
		return hashOf("R")
	}
	return hashOf("D")
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// compare reports where the SQL path's run differs from the Go path's.
func (r driftRun) compare(t *testing.T, sql driftRun) {
	t.Helper()
	for i := range min(len(r.outcomes), len(sql.outcomes)) {
		if !slices.Equal(r.outcomes[i], sql.outcomes[i]) {
			t.Errorf("step %d: outcomes go %v, sql %v", i+1, r.outcomes[i], sql.outcomes[i])
		}
	}
	if !slices.Equal(r.drift, sql.drift) {
		t.Errorf("drift rows differ:\ngo  %q\nsql %q", r.drift, sql.drift)
	}
	if !mapsEqual(r.effects, sql.effects) {
		t.Errorf("effects: go %v, sql %v", r.effects, sql.effects)
	}
	if !slices.Equal(r.dead, sql.dead) {
		t.Errorf("dead letters: go %v, sql %v", r.dead, sql.dead)
	}
	if !mapsEqual(r.checkpoint, sql.checkpoint) {
		t.Errorf("checkpoints: go %v, sql %v", r.checkpoint, sql.checkpoint)
	}
}
