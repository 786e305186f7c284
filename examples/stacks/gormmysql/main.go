// Command gormmysql is txinbox with GORM on MySQL or MariaDB: the handler
// opens GORM on the inbox's *sql.Tx, so its write commits with the inbox
// row, or neither.
//
//	DATABASE_URL=mysql://app:secret@127.0.0.1:3306/billing go run ./gormmysql   # processed, then duplicate
package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"os"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"

	"github.com/txinbox/txinbox"
	"github.com/txinbox/txinbox/store/mysqlstore"
)

// Invoice is a row of the invoices table.
type Invoice struct {
	ID        int64
	MessageID string
	Body      string
}

// handle writes the message's invoice with GORM on the inbox's transaction.
func handle(ctx context.Context, tx *sql.Tx, m *txinbox.Message) error {
	gdb, err := openGORM(tx, &gorm.Config{SkipDefaultTransaction: true})
	if err != nil {
		return err
	}
	return gdb.WithContext(ctx).Create(&Invoice{MessageID: m.ID, Body: string(m.Payload)}).Error
}

// openGORM opens GORM on tx: it runs on tx and begins no transaction of its
// own (gdb.Transaction nests: SAVEPOINT). SkipInitializeWithVersion saves the
// SELECT VERSION() that GORM's MySQL dialect would send on every open.
func openGORM(tx *sql.Tx, cfg *gorm.Config) (*gorm.DB, error) {
	return gorm.Open(mysql.New(mysql.Config{Conn: tx, SkipInitializeWithVersion: true}), cfg)
}

// setup migrates the inbox and creates the invoices table.
func setup(ctx context.Context, db *sql.DB) (*mysqlstore.Driver, error) {
	driver, err := mysqlstore.New(db, mysqlstore.Options{})
	if err == nil {
		err = driver.Migrate(ctx)
	}
	if err == nil {
		_, err = db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS invoices (
			id BIGINT AUTO_INCREMENT PRIMARY KEY, message_id VARCHAR(255) NOT NULL, body TEXT NOT NULL)`)
	}
	return driver, err
}

// run processes one message twice, as a broker redelivering it would.
func run(ctx context.Context, db *sql.DB, out io.Writer) error {
	driver, err := setup(ctx, db)
	if err != nil {
		return err
	}
	p, err := txinbox.NewProcessor(driver, txinbox.Config[*sql.Tx]{Scope: "gorm-example", Handler: handle})
	if err != nil {
		return err
	}
	msg := &txinbox.Message{ID: "InvoiceIssued/42", Payload: []byte("INVOIC 42")}
	for range 2 {
		res, err := p.Process(ctx, []*txinbox.Message{msg})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: %s\n", msg.ID, res[0].Outcome) // ack the broker when res[0].Outcome.Ack()
	}
	return nil
}

func main() {
	// mysqlstore.Open: go-sql-driver's connections, each batch an XA
	// transaction (a handler's COMMIT is refused; docs/mysqlstore.md).
	db, err := mysqlstore.Open(cmp.Or(os.Getenv("DATABASE_URL"), "mysql://root@127.0.0.1:3306/billing"))
	if err == nil {
		err = run(context.Background(), db, os.Stdout)
	}
	if err != nil {
		log.Fatal(err)
	}
}
