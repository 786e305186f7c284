//go:build race

package as4

// raceEnabled: the race detector changes allocation, so the memory tests
// only report their figures.
const raceEnabled = true
