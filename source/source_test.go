package source_test

import (
	"database/sql"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/source"
	"github.com/txinbox/txinbox/source/amqp"
	"github.com/txinbox/txinbox/source/jetstream"
	"github.com/txinbox/txinbox/source/kafka"
	"github.com/txinbox/txinbox/source/sqs"
)

// Every processor is a source.Processor and a source.OffsetProcessor, and
// each source offers what its broker can answer.
var (
	_ source.Processor       = (*txinbox.Processor[pgx.Tx])(nil)
	_ source.Processor       = (*txinbox.Processor[*sql.Tx])(nil)
	_ source.OffsetProcessor = (*txinbox.Processor[pgx.Tx])(nil)
	_ source.OffsetProcessor = (*txinbox.Processor[*sql.Tx])(nil)

	_ source.Horizoner = (*kafka.Consumer)(nil)
	_ source.Lagger    = (*kafka.Consumer)(nil)
	_ source.Readier   = (*kafka.Consumer)(nil)
	_ source.Horizoner = (*sqs.Consumer)(nil)
	_ source.Lagger    = (*sqs.Consumer)(nil)
	_ source.Readier   = (*sqs.Consumer)(nil)
	_ source.Lagger    = (*amqp.Consumer)(nil)
	_ source.Readier   = (*amqp.Consumer)(nil)
	_ source.Lagger    = (*jetstream.Consumer)(nil)
	_ source.Readier   = (*jetstream.Consumer)(nil)
)
