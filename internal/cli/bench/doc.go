// Package bench implements txinbox bench: txinbox against PostgreSQL's
// own insert ceiling and the seed's algorithm, the purge, inbox growth and
// the scale-out of serve processes, printed as a table (and a chart).
package bench
