package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
)

// benchReport is what --json prints.
type benchReport struct {
	// The headline figures at the first --duplicates share.
	headline
	// The same at 30% duplicates, when 0.3 is measured and is not the
	// first share.
	Dup30 *headline `json:"-"`

	SeedMsgsPerS   float64 `json:"seed_msgs_per_s"`
	Seed16MsgsPerS float64 `json:"seed16_msgs_per_s"`
	LightLoadP99ms float64 `json:"light_load_p99_ms"`
	// LightLoadBusyP99ms is the light load's p99 with --busy CPU-bound
	// processes beside it, LightLoadBusyRunnable the mean runnable tasks
	// on the machine meanwhile.
	LightLoadBusyP99ms    float64  `json:"light_load_busy_p99_ms,omitempty"`
	LightLoadBusyRunnable float64  `json:"light_load_busy_runnable_tasks,omitempty"`
	TxinboxVsSeed         *float64 `json:"txinbox_vs_seed,omitempty"`
	// ScaleOut is serve processes in one Kafka group draining a backlog.
	ScaleOut            []scalePoint   `json:"scale_out,omitempty"`
	PeakRSSMB           float64        `json:"peak_rss_mb"`
	LoadAverage         [2]float64     `json:"load_average"` // at the start and the end of the run
	DurationPerScenario string         `json:"duration_per_scenario"`
	Results             []*benchResult `json:"results"`
	Growth              []growthPoint  `json:"growth,omitempty"`
	BatchSizes          []batchPoint   `json:"batch_sizes,omitempty"`
	Purge               []purgePoint   `json:"purge,omitempty"`
}

// headline is the figures of one duplicate share: each scenario's
// messages/s and its ratio to the (two-row) ceiling. A ratio is nil (left
// out of the JSON) unless both its scenarios ran.
type headline struct {
	CeilingMsgsPerS       float64 `json:"ceiling_msgs_per_s"`
	CeilingOneRowMsgsPerS float64 `json:"ceiling_one_row_msgs_per_s"`
	// CeilingFullRowMsgsPerS is the ceiling writing the inbox row as
	// txinbox does (every column per message), with the ratios to it.
	CeilingFullRowMsgsPerS float64  `json:"ceiling_full_row_msgs_per_s"`
	TxinboxVsFullRow       *float64 `json:"txinbox_vs_full_row_ceiling,omitempty"`
	DeclarativeVsFullRow   *float64 `json:"txinbox_declarative_vs_full_row_ceiling,omitempty"`
	TxinboxMsgsPerS        float64  `json:"txinbox_msgs_per_s"`
	DeclarativeMsgsPerS    float64  `json:"txinbox_declarative_msgs_per_s"`
	KafkaWatermarkMsgsPerS float64  `json:"kafka_watermark_msgs_per_s"`
	E2EKafkaMsgsPerS       float64  `json:"e2e_kafka_msgs_per_s"`
	TxinboxVsCeiling       *float64 `json:"txinbox_vs_ceiling,omitempty"`
	DeclarativeVsCeiling   *float64 `json:"txinbox_declarative_vs_ceiling,omitempty"`
	// KafkaWatermarkVsOneRow is the offsets-as-the-inbox mode against the
	// one-row ceiling, the goal's measure.
	KafkaWatermarkVsOneRow *float64 `json:"kafka_watermark_vs_one_row_ceiling,omitempty"`
	E2EKafkaVsCeiling      *float64 `json:"e2e_kafka_vs_ceiling,omitempty"`
	// The database/sql store (pgdbstore) on the same loads as txinbox
	// and declarative, and its ratios to them (pgstore's) and to the
	// ceiling.
	DatabaseSQLMsgsPerS             float64  `json:"database_sql_msgs_per_s"`
	DatabaseSQLDeclarativeMsgsPerS  float64  `json:"database_sql_declarative_msgs_per_s"`
	DatabaseSQLVsTxinbox            *float64 `json:"database_sql_vs_txinbox,omitempty"`
	DatabaseSQLDeclarativeVsDecl    *float64 `json:"database_sql_declarative_vs_declarative,omitempty"`
	DatabaseSQLVsCeiling            *float64 `json:"database_sql_vs_ceiling,omitempty"`
	DatabaseSQLDeclarativeVsCeiling *float64 `json:"database_sql_declarative_vs_ceiling,omitempty"`
}

// record keeps a scenario's figure in the headline of its duplicate share.
func (rep *benchReport) record(key string, r *benchResult, first bool) {
	h := &rep.headline
	if !first {
		if math.Abs(r.Duplicates-0.3) > 1e-9 {
			return
		}
		if rep.Dup30 == nil {
			rep.Dup30 = &headline{}
		}
		h = rep.Dup30
	}
	switch key {
	case "ceiling":
		h.CeilingMsgsPerS = r.MsgsPerSec
	case "ceiling-one-row":
		h.CeilingOneRowMsgsPerS = r.MsgsPerSec
	case "ceiling-full-row":
		h.CeilingFullRowMsgsPerS = r.MsgsPerSec
	case "txinbox":
		h.TxinboxMsgsPerS = r.MsgsPerSec
	case "declarative":
		h.DeclarativeMsgsPerS = r.MsgsPerSec
	case "database-sql":
		h.DatabaseSQLMsgsPerS = r.MsgsPerSec
	case "database-sql-declarative":
		h.DatabaseSQLDeclarativeMsgsPerS = r.MsgsPerSec
	case "kafka-watermark":
		h.KafkaWatermarkMsgsPerS = r.MsgsPerSec
	case "e2e-kafka":
		h.E2EKafkaMsgsPerS = r.MsgsPerSec
	}
	if first {
		rep.recordFirst(key, r)
	}
	h.ratios()
}

// recordFirst keeps the figures reported for the first share only.
func (rep *benchReport) recordFirst(key string, r *benchResult) {
	switch key {
	case "seed":
		rep.SeedMsgsPerS = r.MsgsPerSec
	case "seed16":
		rep.Seed16MsgsPerS = r.MsgsPerSec
	case "light":
		rep.LightLoadP99ms = r.P99ms
	case "light-busy":
		rep.LightLoadBusyP99ms, rep.LightLoadBusyRunnable = r.P99ms, r.Runnable
	}
	rep.TxinboxVsSeed = ratio(rep.TxinboxMsgsPerS, rep.SeedMsgsPerS)
}

// ratio is a/b when both were measured, else nil: a scenario that did not
// run (--only) has no ratio rather than one of 0.
func ratio(a, b float64) *float64 {
	if a <= 0 || b <= 0 {
		return nil
	}
	r := a / b
	return &r
}

func (h *headline) ratios() {
	h.TxinboxVsCeiling = ratio(h.TxinboxMsgsPerS, h.CeilingMsgsPerS)
	h.DeclarativeVsCeiling = ratio(h.DeclarativeMsgsPerS, h.CeilingMsgsPerS)
	h.E2EKafkaVsCeiling = ratio(h.E2EKafkaMsgsPerS, h.CeilingMsgsPerS)
	h.TxinboxVsFullRow = ratio(h.TxinboxMsgsPerS, h.CeilingFullRowMsgsPerS)
	h.DeclarativeVsFullRow = ratio(h.DeclarativeMsgsPerS, h.CeilingFullRowMsgsPerS)
	h.KafkaWatermarkVsOneRow = ratio(h.KafkaWatermarkMsgsPerS, h.CeilingOneRowMsgsPerS)
	h.DatabaseSQLVsTxinbox = ratio(h.DatabaseSQLMsgsPerS, h.TxinboxMsgsPerS)
	h.DatabaseSQLDeclarativeVsDecl = ratio(h.DatabaseSQLDeclarativeMsgsPerS, h.DeclarativeMsgsPerS)
	h.DatabaseSQLVsCeiling = ratio(h.DatabaseSQLMsgsPerS, h.CeilingMsgsPerS)
	h.DatabaseSQLDeclarativeVsCeiling = ratio(h.DatabaseSQLDeclarativeMsgsPerS, h.CeilingMsgsPerS)
}

// MarshalJSON prints the report with the 30% headline's keys suffixed
// "_dup30" (e.g. "ceiling_msgs_per_s_dup30") next to the first share's.
func (rep *benchReport) MarshalJSON() ([]byte, error) {
	type plain benchReport
	out, err := json.Marshal((*plain)(rep))
	if err != nil || rep.Dup30 == nil {
		return out, err
	}
	var fields map[string]json.RawMessage
	raw, err := json.Marshal(rep.Dup30)
	if err == nil {
		err = json.Unmarshal(raw, &fields)
	}
	if err != nil {
		return nil, err
	}
	keys := slices.Sorted(maps.Keys(fields))
	var b bytes.Buffer
	b.Write(out[:len(out)-1]) // without its closing brace
	for _, k := range keys {
		fmt.Fprintf(&b, ",%q:%s", k+"_dup30", fields[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
