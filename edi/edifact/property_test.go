package edifact

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// separatorPool are the characters the property test draws service
// characters from: punctuation and the ISO information separators.
const separatorPool = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\x1c\x1d\x1e\x1f"

// valueAlphabet is what key values are drawn from: every separator
// candidate, letters, digits, spaces, line breaks and non-ASCII bytes.
const valueAlphabet = separatorPool + "ABCZaz09 \r\n\xc3\xa9\xff"

func randomSeparators(rng *rand.Rand, version string) Separators {
	perm := rng.Perm(len(separatorPool))
	pick := func(i int) byte { return separatorPool[perm[i]] }
	s := Separators{Component: pick(0), Element: pick(1), Decimal: ".,"[rng.IntN(2)], Release: pick(2), Repetition: pick(3), Segment: pick(4)}
	if version != "4" && rng.IntN(2) == 0 {
		s.Repetition = 0 // UNA5 space
	}
	return s
}

func randomValue(rng *rand.Rand) string {
	b := []byte{"ABC"[rng.IntN(3)]} // never empty after normalisation
	for n := rng.IntN(12); n > 0; n-- {
		b = append(b, valueAlphabet[rng.IntN(len(valueAlphabet))])
	}
	return string(b)
}

// escape releases every character that is a service character of the
// interchange: the repetition separator only in syntax version 4.
func escape(v string, s Separators, version string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == s.Component || c == s.Element || c == s.Release || c == s.Segment || (version == "4" && c == s.Repetition) {
			b.WriteByte(s.Release)
		}
		b.WriteByte(c)
	}
	return b.String()
}

// encode writes an interchange with the given key values and separators;
// the body carries the values again, in a data segment.
func encode(vals []string, s Separators, version string, una bool) string {
	e := func(v string) string { return escape(v, s, version) }
	c, d, t := string(s.Component), string(s.Element), string(s.Segment)
	var b strings.Builder
	if una {
		b.WriteString(s.UNA())
	}
	b.WriteString("UNB" + d + "UNOC" + c + version + d + e(vals[0]) + c + e(vals[1]) + d + e(vals[2]) + c + e(vals[3]) +
		d + "200101" + c + "1200" + d + e(vals[4]) + d + d + d + d + d + d + e(vals[5]) + t + "\r\n")
	b.WriteString("UNH" + d + "M1" + d + "INVOIC" + c + "D" + c + "96A" + c + "UN" + t)
	b.WriteString("FTX" + d + e(strings.Join(vals, "")) + t)
	b.WriteString("UNT" + d + "3" + d + "M1" + t + "UNZ" + d + "1" + d + e(vals[4]) + t)
	return b.String()
}

func normalise(v string) string {
	v = strings.NewReplacer("\r", "", "\n", "").Replace(v)
	return strings.TrimRight(v, " ")
}

// TestKeyIndependentOfSeparators checks that the key of an interchange does
// not change when its UNA declares other service characters and the
// interchange is re-encoded with them, release characters inserted where a
// value contains a service character.
func TestKeyIndependentOfSeparators(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 2000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 42))
		version := []string{"1", "2", "3", "4"}[rng.IntN(4)]
		vals := make([]string, 6)
		for i := range vals {
			vals[i] = randomValue(rng)
		}
		vals[5] = vals[5][:1] // the test indicator is one character
		def := DefaultSeparators
		if version == "4" {
			def.Repetition = '*'
		}
		plain := encode(vals, def, version, rng.IntN(2) == 0)
		custom := encode(vals, randomSeparators(rng, version), version, true)
		a, errA := Parse(strings.NewReader(plain))
		b, errB := Parse(strings.NewReader(custom))
		if errA != nil || errB != nil {
			t.Fatalf("seed %d: default: %v\ncustom: %v\n%q\n%q", seed, errA, errB, plain, custom)
		}
		ka, kb := a[0].Key(), b[0].Key()
		for i := range vals {
			if ka[i] != kb[i] || ka[i] != normalise(vals[i]) {
				t.Fatalf("seed %d value %d: default %q, custom %q, want %q\n%q\n%q", seed, i, ka[i], kb[i], normalise(vals[i]), plain, custom)
			}
		}
	}
}

// TestReleaseOfRepetitionSeparator pins the version 1-3 and 4 difference:
// UNA5 is a service character only in version 4.
func TestReleaseOfRepetitionSeparator(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"3", "4"} {
		in := "UNA:+.?*'UNB+UNOA:" + version + "+S*1+R+000101:0000+1'UNH+1+X'UNT+2+1'UNZ+1+1'"
		ic := parseOne(t, in)
		if ic.Sender.ID != "S*1" {
			t.Errorf("version %s: sender %q, want the unreleased '*' kept as data", version, ic.Sender.ID)
		}
		if !bytes.Contains([]byte(ic.Separators.UNA()), []byte{'*'}) != (version != "4") {
			t.Errorf("version %s: separators %+v", version, ic.Separators)
		}
	}
}
