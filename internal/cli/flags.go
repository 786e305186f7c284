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

// intValue is an int flag of at least min.
type intValue struct {
	p   *int
	min int
}

func (v intValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is not a whole number", s)
	}
	if n < v.min {
		return fmt.Errorf("%d: must be at least %d", n, v.min)
	}
	*v.p = n
	return nil
}

// intFlag defines an int flag that refuses values below min.
func intFlag(fs *flag.FlagSet, p *int, name string, def, min int, usage string) {
	*p = def
	fs.Var(intValue{p, min}, name, usage)
}

// int64Value is an int64 flag of at least min.
type int64Value struct {
	p   *int64
	min int64
}

func (v int64Value) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.FormatInt(*v.p, 10)
}

func (v int64Value) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not a whole number", s)
	}
	if n < v.min {
		return fmt.Errorf("%d: must be at least %d", n, v.min)
	}
	*v.p = n
	return nil
}

// int64Flag defines an int64 flag that refuses values below min.
func int64Flag(fs *flag.FlagSet, p *int64, name string, def, min int64, usage string) {
	*p = def
	fs.Var(int64Value{p, min}, name, usage)
}

// durationValue is a duration flag that must be positive, or, with
// zeroOK, not negative.
type durationValue struct {
	p      *time.Duration
	zeroOK bool
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
		return fmt.Errorf("%q is not a duration (e.g. 30s, 5m)", s)
	}
	switch {
	case d < 0:
		return fmt.Errorf("%s: must not be negative", d)
	case d == 0 && !v.zeroOK:
		return fmt.Errorf("%s: must be positive", d)
	}
	*v.p = d
	return nil
}

// durationFlag defines a duration flag that must be positive (zeroOK: or
// zero, which then means what usage says).
func durationFlag(fs *flag.FlagSet, p *time.Duration, name string, def time.Duration, zeroOK bool, usage string) {
	*p = def
	fs.Var(durationValue{p, zeroOK}, name, usage)
}

// fractionValue is a float flag between 0 and 1.
type fractionValue struct{ p *float64 }

func (v fractionValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.FormatFloat(*v.p, 'g', -1, 64)
}

func (v fractionValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 0 && f <= 1) { // NaN too

		return fmt.Errorf("%q: must be a number from 0 to 1", s)
	}
	*v.p = f
	return nil
}

// fractionFlag defines a float flag between 0 and 1.
func fractionFlag(fs *flag.FlagSet, p *float64, name string, def float64, usage string) {
	*p = def
	fs.Var(fractionValue{p}, name, usage)
}
