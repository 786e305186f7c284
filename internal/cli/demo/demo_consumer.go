package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/internal/cli/clikit"
	"github.com/txinbox/txinbox/store"
)

// The demo's consumer is a child process (the hidden command
// "demo-consumer") that the demo's broker feeds over stdin and SIGKILLs.
// Protocol: JSON lines. Broker to consumer: demoDelivery. Consumer to
// broker: demoReply.

const demoScope = "edi-invoicer"

type demoDelivery struct {
	Seq     int64  `json:"seq"`
	ID      string `json:"id"`
	Payload string `json:"payload"`
}

type demoReply struct {
	Ack     int64  `json:"ack,omitempty"`
	Nack    int64  `json:"nack,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	At      string `json:"at,omitempty"` // a crash point reached: kill me now
	Error   string `json:"error,omitempty"`
}

// Sabotage modes break the consumer on purpose, to prove that the demo's
// checker catches what the inbox prevents.
const (
	SabotageDeliveryKey = "delivery-key" // key on the delivery, not the message: redeliveries run twice
	SabotageAckFirst    = "ack-first"    // ack before the commit: a crash loses the message
)

// Crash points at which the consumer stops and asks to be killed.
const (
	crashAfterEffect = "after-effect-before-commit"
	crashAfterCommit = "after-commit-before-ack"
	crashRandom      = "random-moment"
)

type demoInvoice struct {
	Type        string `json:"type"`
	InvoiceNo   string `json:"invoice_no"`
	Partner     string `json:"partner"`
	AmountCents int64  `json:"amount_cents"`
	Run         string `json:"run"`
}

// RunConsumer is the hidden child command of the in-memory broker: one
// consumer fed on its stdin, until stdin closes or it is killed.
func RunConsumer(ctx context.Context, env *clikit.Env, args []string) int {
	fs := flag.NewFlagSet("demo-consumer", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var dbf clikit.DBFlags
	dbf.Register(fs, env)
	point := fs.String("crash-point", "", "stop at this crash point and wait to be killed")
	after := new(int)
	clikit.IntFlag(fs, after, "crash-after", 0, 0, "reach the crash point after this many messages")
	sabotage := fs.String("sabotage", "", "break the consumer on purpose (see demo --sabotage)")
	if err := fs.Parse(args); err != nil {
		return clikit.ExitUsage
	}
	db, err := clikit.OpenDB(ctx, dbf, 4)
	if err != nil {
		fmt.Fprintln(env.Stderr, "demo-consumer:", err)
		return clikit.ExitFailure
	}
	defer db.Close()
	c := &demoConsumer{out: json.NewEncoder(env.Stdout), point: *point, after: *after, sabotage: *sabotage}
	in := readDeliveries(env.Stdin)
	if db.PG != nil {
		err = consume(ctx, c, db.PG, clikit.PGTxExec, in)
	} else {
		err = consume(ctx, c, db.SQL, db.SQLExec(), in)
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, "demo-consumer:", err)
		return clikit.ExitFailure
	}
	return clikit.ExitOK
}

type demoConsumer struct {
	mu       sync.Mutex
	out      *json.Encoder
	point    string
	after    int
	sabotage string
	handled  int // handler calls, for the after-effect crash point
	acked    int // committed messages, for the after-commit crash point
	// log goes to the child's stderr, which the parent keeps the tail of
	// and prints when the child fails or the demo stalls.
	log    *slog.Logger
	stderr io.Writer
}

func (c *demoConsumer) reply(r demoReply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out.Encode(r) //nolint:errcheck // the broker is gone: nothing to tell it
}

// stopHere announces the crash point and blocks until SIGKILL arrives.
func (c *demoConsumer) stopHere(point string) {
	c.reply(demoReply{At: point})
	select {}
}

func readDeliveries(r io.Reader) <-chan demoDelivery {
	ch := make(chan demoDelivery, 1024)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			var d demoDelivery
			if json.Unmarshal(sc.Bytes(), &d) == nil {
				ch <- d
			}
		}
	}()
	return ch
}

// consume runs the inbox: the side effect (one partner_invoices row and one
// outbox row) runs in the inbox's transaction; acks go out after the commit.
func consume[TTx any](ctx context.Context, c *demoConsumer, d store.Driver[TTx], exec clikit.TxExecFunc[TTx], in <-chan demoDelivery) error {
	p, err := txinbox.NewProcessor(d, txinbox.Config[TTx]{
		Scope:  demoScope,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Handler: func(ctx context.Context, tx TTx, m *txinbox.Message) error {
			var inv demoInvoice
			if err := json.Unmarshal(m.Payload, &inv); err != nil {
				return txinbox.Permanent(fmt.Errorf("payload is not an InvoiceIssued event: %w", err))
			}
			// The event's own id, also under the delivery-key sabotage.
			id, _, _ := strings.Cut(m.ID, "#")
			if err := exec(ctx, tx, `INSERT INTO partner_invoices (message_id, invoice_no, partner, amount_cents, run_id)
				VALUES ($1, $2, $3, $4, $5)`, id, inv.InvoiceNo, inv.Partner, inv.AmountCents, inv.Run); err != nil {
				return err
			}
			if err := exec(ctx, tx, `INSERT INTO outbox (message_id, topic, payload) VALUES ($1, $2, $3)`,
				id, "invoic."+inv.Partner, string(m.Payload)); err != nil {
				return err
			}
			c.handled++
			if c.point == crashAfterEffect && c.handled >= c.after {
				c.stopHere(crashAfterEffect)
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	for first := range in {
		batch := gather(first, in, 100, 2*time.Millisecond)
		msgs := make([]*txinbox.Message, len(batch))
		for i, dl := range batch {
			msgs[i] = &txinbox.Message{ID: dl.ID, Source: "invoices", SourcePosition: fmt.Sprint(dl.Seq), Payload: []byte(dl.Payload)}
			switch c.sabotage {
			case SabotageDeliveryKey:
				msgs[i].ID = fmt.Sprint(dl.ID, "#", dl.Seq)
			case SabotageAckFirst:
				c.reply(demoReply{Ack: dl.Seq, Outcome: "processed"})
			}
		}
		res, err := p.Process(ctx, msgs)
		if c.point == crashAfterCommit && err == nil {
			if c.acked += len(batch); c.acked >= c.after {
				c.stopHere(crashAfterCommit)
			}
		}
		for i, dl := range batch {
			switch {
			case err == nil && res[i].Outcome.Ack():
				c.reply(demoReply{Ack: dl.Seq, Outcome: res[i].Outcome.String()})
			case err != nil:
				c.reply(demoReply{Nack: dl.Seq, Error: err.Error()})
			default:
				c.reply(demoReply{Nack: dl.Seq, Error: fmt.Sprint(res[i].Err)})
			}
		}
	}
	return nil
}

// gather returns first and whatever else arrives within linger, up to max.
func gather(first demoDelivery, in <-chan demoDelivery, max int, linger time.Duration) []demoDelivery {
	batch := []demoDelivery{first}
	timer := time.NewTimer(linger)
	defer timer.Stop()
	for len(batch) < max {
		select {
		case d, ok := <-in:
			if !ok {
				return batch
			}
			batch = append(batch, d)
		case <-timer.C:
			return batch
		}
	}
	return batch
}
