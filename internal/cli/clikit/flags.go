package clikit

import (
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/txinbox/txinbox/duration"
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

// typeName is the value's name in help.
func (wholeValue[T]) typeName() string { return "int" }

// IntFlag defines an int flag that refuses values below min.
func IntFlag(fs *flag.FlagSet, p *int, name string, def, min int, usage string) {
	*p = def
	fs.Var(wholeValue[int]{p, min, name}, name, usage)
}

// Int64Flag defines an int64 flag that refuses values below min.
func Int64Flag(fs *flag.FlagSet, p *int64, name string, def, min int64, usage string) {
	*p = def
	fs.Var(wholeValue[int64]{p, min, name}, name, usage)
}

// durationValue is a duration flag that must be positive, or, with
// zeroOK, not negative. It reads the one duration syntax of every
// command (duration.Parse: 30d, 1d12h, 90s, 250ms).
type durationValue struct {
	p      *time.Duration
	zeroOK bool
	name   string
}

func (v durationValue) String() string {
	if v.p == nil {
		return "0s"
	}
	return duration.Format(*v.p)
}

func (v durationValue) Set(s string) error {
	d, err := duration.Parse(s)
	if err != nil {
		return fmt.Errorf("--%s must be a duration (e.g. 30d, 1d12h, 5m, 30s), not %q", v.name, s)
	}
	switch {
	case d < 0:
		return fmt.Errorf("--%s must not be negative, not %s", v.name, duration.Format(d))
	case d == 0 && !v.zeroOK:
		return fmt.Errorf("--%s must be positive, not %s", v.name, duration.Format(d))
	}
	*v.p = d
	return nil
}

// typeName is the value's name in help.
func (durationValue) typeName() string { return "duration" }

// DurationFlag defines a duration flag that must be positive (zeroOK: or
// zero, which then means what usage says).
func DurationFlag(fs *flag.FlagSet, p *time.Duration, name string, def time.Duration, zeroOK bool, usage string) {
	*p = def
	fs.Var(durationValue{p, zeroOK, name}, name, usage)
}

// durationText is a duration flag kept as its text, for a command that
// reads it later (ParseRetention), where "" means another flag's value.
type durationText struct{ p *string }

func (v durationText) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v durationText) Set(s string) error { *v.p = s; return nil }

// typeName is the value's name in help.
func (durationText) typeName() string { return "duration" }

// DurationTextFlag defines a string flag that holds a duration in
// duration.Parse's syntax, read by the command itself (which names the flag
// in its error); help shows it as a duration.
func DurationTextFlag(fs *flag.FlagSet, p *string, name, def, usage string) {
	*p = def
	fs.Var(durationText{p}, name, usage)
}

// ParseRetention reads a retention: a positive duration (duration.Parse).
func ParseRetention(s string) (time.Duration, error) {
	d, err := duration.Parse(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration (e.g. 30d, 720h)", s)
	}
	return d, nil
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

// typeName is the value's name in help.
func (fractionValue) typeName() string { return "fraction" }

// FractionFlag defines a float flag between 0 and 1.
func FractionFlag(fs *flag.FlagSet, p *float64, name string, def float64, usage string) {
	*p = def
	fs.Var(fractionValue{p, name}, name, usage)
}
