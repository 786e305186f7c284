package runner

import (
	"context"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source"
)

// ReportAck tells proc's AckHooks (txinbox.Processor.ReportAck) that an
// acknowledgement to the broker of n committed messages of source (their
// Message.Source), started at start, ended with err. The scope is the
// processor's.
func ReportAck(ctx context.Context, proc source.Processor, source string, n int, start time.Time, err error) {
	proc.ReportAck(ctx, txinbox.AckInfo{Source: source, Messages: n, Duration: time.Since(start), Err: err})
}
