package cli

import (
	"flag"
	"fmt"
	"strconv"
	"time"
)

// The numeric flags of every command are defined through these, so that a
// value out of range is refused when it is parsed (from the command line,
// a --config file or a TXINBOX_* variable, which all go through Set),
// with the flag's name and exit 2, rather than spinning (a batch of 0) or
// failing later inside a library.

// wholeValue is an int or int64 flag of at least min.
type wholeValue[T int | int64] struct {
	p    *T
	min  T
	name string
}

func (v wholeValue[T]) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.FormatInt(int64(*v.p), 10)
}

func (v wholeValue[T]) Set(s string) error {
	n64, err := strconv.ParseInt(s, 10, 64)
	if err != nil || int64(T(n64)) != n64 { // the second: out of an int's range
		return fmt.Errorf("--%s must be a whole number, not %q", v.name, s)
	}
	if n := T(n64); n < v.min {
		return fmt.Errorf("--%s must be at least %d, not %d", v.name, v.min, n)
	}
	*v.p = T(n64)
	return nil
}

// intFlag defines an int flag that refuses values below min.
func intFlag(fs *flag.FlagSet, p *int, name string, def, min int, usage string) {
	*p = def
	fs.Var(wholeValue[int]{p, min, name}, name, usage)
}

// int64Flag defines an int64 flag that refuses values below min.
func int64Flag(fs *flag.FlagSet, p *int64, name string, def, min int64, usage string) {
	*p = def
	fs.Var(wholeValue[int64]{p, min, name}, name, usage)
}

// durationValue is a duration flag that must be positive, or, with
// zeroOK, not negative.
type durationValue struct {
	p      *time.Duration
	zeroOK bool
	name   string
}

func (v durationValue) String() string {
	if v.p == nil {
		return "0s"
	}
	return v.p.String()
}

func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("--%s must be a duration (e.g. 30s, 5m), not %q", v.name, s)
	}
	switch {
	case d < 0:
		return fmt.Errorf("--%s must not be negative, not %s", v.name, d)
	case d == 0 && !v.zeroOK:
		return fmt.Errorf("--%s must be positive, not %s", v.name, d)
	}
	*v.p = d
	return nil
}

// durationFlag defines a duration flag that must be positive (zeroOK: or
// zero, which then means what usage says).
func durationFlag(fs *flag.FlagSet, p *time.Duration, name string, def time.Duration, zeroOK bool, usage string) {
	*p = def
	fs.Var(durationValue{p, zeroOK, name}, name, usage)
}

// fractionValue is a float flag between 0 and 1.
type fractionValue struct {
	p    *float64
	name string
}

func (v fractionValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.FormatFloat(*v.p, 'g', -1, 64)
}

func (v fractionValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 0 && f <= 1) { // NaN too
		return fmt.Errorf("--%s must be a number from 0 to 1, not %q", v.name, s)
	}
	*v.p = f
	return nil
}

// fractionFlag defines a float flag between 0 and 1.
func fractionFlag(fs *flag.FlagSet, p *float64, name string, def float64, usage string) {
	*p = def
	fs.Var(fractionValue{p, name}, name, usage)
}
