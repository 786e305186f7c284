package httpinbox_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/httpinbox"
)

func TestParseIdempotencyKey(t *testing.T) {
	for _, c := range []struct {
		lines []string
		want  string
		ok    bool
	}{
		{nil, "", true},
		{[]string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`}, "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{[]string{`  "a b"  `}, "a b", true},
		{[]string{`"a\"b\\c"`}, `a"b\c`, true},
		{[]string{`"k";a=1;b;c="x";d=?0;e=:YWJj:;f=tok/en;g=-1.5;*h=2`}, "k", true},
		{[]string{`"k"; a=1`}, "k", true},
		{[]string{`""`}, "", false},
		{[]string{``}, "", false},
		{[]string{`k`}, "", false},
		{[]string{`"a", "b"`}, "", false},
		{[]string{`"a"`, `"a"`}, "", false},
		{[]string{`"a\x"`}, "", false},
		{[]string{"\"a\x00b\""}, "", false},
		{[]string{"\"\u00e9\""}, "", false},
		{[]string{`"a";A=1`}, "", false},
		{[]string{`"a";a=`}, "", false},
		{[]string{`"a";a=1.`}, "", false},
		{[]string{`"a";a=1234567890123456`}, "", false},
		{[]string{`"a";a=?2`}, "", false},
		{[]string{`"a";a=:YW$:`}, "", false},
		{[]string{`"a`}, "", false},
		{[]string{`"a\`}, "", false},
	} {
		got, err := httpinbox.ParseIdempotencyKey(c.lines)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseIdempotencyKey(%q) = %q, %v; want %q, ok %v", c.lines, got, err, c.want, c.ok)
		}
		if err != nil && !errors.Is(err, httpinbox.ErrKeyInvalid) {
			t.Errorf("%q: error %v does not match ErrKeyInvalid", c.lines, err)
		}
	}
}

// FuzzParseIdempotencyKey: the parser never panics; a key it accepts is
// printable ASCII, not empty, and serialises back to a field it parses
// to the same key.
func FuzzParseIdempotencyKey(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b"`, `"k";a=1;b`, `"x";y=:YWJj:`, `""`, `"a", "b"`, "\"\x00\"", `"k";a=-1.25`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, field string) {
		key, err := httpinbox.ParseIdempotencyKey([]string{field})
		if err != nil {
			if key != "" {
				t.Fatalf("error %v with key %q", err, key)
			}
			return
		}
		if key == "" {
			t.Fatalf("%q accepted as an empty key", field)
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("%q gave key %q with byte 0x%02x", field, key, key[i])
			}
		}
		again, err := httpinbox.ParseIdempotencyKey([]string{`"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`})
		if err != nil || again != key {
			t.Fatalf("%q: key %q serialised parses to %q, %v", field, key, again, err)
		}
	})
}
