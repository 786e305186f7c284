package clikit

import (
	"slices"
	"testing"
)

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
