package txinbox

// Settings are the settings of a Processor that a source adapts to, after
// the defaults were filled in.
type Settings struct {
	// Scope is Config.Scope.
	Scope string
	// MaxBatchSize is Config.MaxBatchSize: a source gathers this many
	// deliveries into one Process call.
	MaxBatchSize int
	// MaxAttempts is Config.MaxAttempts.
	MaxAttempts int
	// Ordered is Config.Ordered.
	Ordered bool
}

// Settings returns the processor's settings.
func (p *Processor[TTx]) Settings() Settings {
	return Settings{Scope: p.cfg.Scope, MaxBatchSize: p.cfg.MaxBatchSize, MaxAttempts: p.cfg.MaxAttempts, Ordered: p.cfg.Ordered}
}
