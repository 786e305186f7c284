// Package demo implements txinbox demo: a broker publishes InvoiceIssued
// events, consumer child processes (the hidden demo-consumer commands)
// apply them through the inbox and are SIGKILLed at random moments, and the
// demo counts the effects. The invoicer scenario (--scenario invoicer) is
// package invoicerdemo, reached through Command.Invoicer.
package demo
