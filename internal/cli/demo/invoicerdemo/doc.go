// Package invoicerdemo implements txinbox demo --scenario invoicer: the
// seed's EDI invoicer end to end (Kafka, the inbox, the outbox, AS4 to a
// partner with its own inbox), with its three child processes SIGKILLed.
package invoicerdemo
