// Package serve implements txinbox serve, which parses flags, a YAML file
// and TXINBOX_* variables into a server.Config and runs it, and txinbox
// relay (the outbox relay on its own). Package cli lists the commands.
package serve
