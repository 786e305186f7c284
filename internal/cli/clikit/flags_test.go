package clikit

import (
	"slices"
	"testing"
	"time"
)

// TestParseDuration: one syntax for every duration flag: Go's, plus days,
// alone or combined.
func TestParseDuration(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want time.Duration
		out  string
	}{
		{"30d", 30 * Day, "30d"}, {"1d12h", 36 * time.Hour, "1d12h"}, {"1.5d", 36 * time.Hour, "1d12h"},
		{"7d", 7 * Day, "7d"}, {"720h", 30 * Day, "30d"}, {"90s", 90 * time.Second, "1m30s"},
		{"250ms", 250 * time.Millisecond, "250ms"}, {"5m", 5 * time.Minute, "5m"}, {"2h45m", 165 * time.Minute, "2h45m"},
		{"1d30m", Day + 30*time.Minute, "1d30m"}, {"-3d", -3 * Day, "-3d"}, {"0s", 0, "0s"}, {"1d0s", Day, "1d"},
	} {
		d, err := ParseDuration(c.in)
		if err != nil || d != c.want || FormatDuration(d) != c.out {
			t.Errorf("parseDuration(%q) = %v, %v (formatted %q); want %v, %q", c.in, d, err, FormatDuration(d), c.want, c.out)
		}
	}
	for _, bad := range []string{"", "d", "3", "1e3d", "infd", "NaNd", "1d-2h", "3 days", "0x1d", "1dd", "--1d", "1_0d",
		"99999d2562047h", "100000d100000d"} { // the last but one overflows an int64 of nanoseconds {
		if d, err := ParseDuration(bad); err == nil {
			t.Errorf("parseDuration(%q) = %v, want an error", bad, d)
		}
	}
}

// TestFlagsAnywhere: flags before, between and after the positional
// arguments; "--" ends the flags, unless it is a flag's value.
func TestFlagsAnywhere(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args   []string
		reason string
		pos    []string
	}{
		{[]string{"a", "--reason", "r", "b"}, "r", []string{"a", "b"}},
		{[]string{"--reason=r", "a"}, "r", []string{"a"}},
		{[]string{"a", "--", "--reason", "x"}, "", []string{"a", "--reason", "x"}},
		{[]string{"--reason", "--", "a"}, "--", []string{"a"}},
		{[]string{"--json", "a", "--", "-"}, "", []string{"a", "-"}},
	} {
		fs := NewFlagSet("t")
		reason := fs.String("reason", "", "")
		fs.Bool("json", false, "")
		pos, err := fs.ParseAll(c.args, nil)
		if err != nil || *reason != c.reason || !slices.Equal(pos, c.pos) {
			t.Errorf("%q: reason %q, positional %q, %v; want %q and %q", c.args, *reason, pos, err, c.reason, c.pos)
		}
	}
}

// TestFlagErrorWords: the flag package's errors in the help's words: an
// unknown flag as the user typed it (--name), a bad boolean with the
// values it takes.
func TestFlagErrorWords(t *testing.T) {
	t.Parallel()
	fs := NewFlagSet("t")
	fs.Bool("json", false, "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "unknown flag --bogus"},
		{[]string{"-bogus=1"}, "unknown flag --bogus"},
		{[]string{"--json=yes"}, `--json: invalid value "yes": use true or false`},
	} {
		_, err := fs.ParseAll(c.args, nil)
		if err == nil || FlagError(err) != c.want {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
	_, err := fs.ParseAll(nil, func(string) string { return "yes" })
	if err == nil || FlagError(err) != `environment TXINBOX_JSON: invalid value "yes": use true or false` {
		t.Errorf("TXINBOX_JSON=yes: %v", err)
	}
}
