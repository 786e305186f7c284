//go:build !race

package testsamples

// RaceEnabled reports whether the race detector is on; large-input tests
// use smaller inputs then, the detector slowing byte loops tenfold.
const RaceEnabled = false
