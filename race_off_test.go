//go:build !race

package txinbox_test

// raceEnabled: the race detector slows SQLite (transpiled C) about
// tenfold, so the long tests run fewer deliveries over the same span.
const raceEnabled = false
