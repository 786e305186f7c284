package duration

import (
	"math"
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{250 * time.Millisecond, "250ms"},
		{90 * time.Second, "1m30s"},
		{time.Minute, "1m"},
		{12 * time.Hour, "12h"},
		{720 * time.Hour, "30d"},
		{36 * time.Hour, "1d12h"},
		{-time.Hour, "-1h"},
		{math.MinInt64, "-106751d23h47m16.854775808s"},
	} {
		if got := Format(tc.d); got != tc.want {
			t.Errorf("Format(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestParse: one syntax for every duration flag: Go's, plus days, alone or
// combined.
func TestParse(t *testing.T) {
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
		d, err := Parse(c.in)
		if err != nil || d != c.want || Format(d) != c.out {
			t.Errorf("Parse(%q) = %v, %v (formatted %q); want %v, %q", c.in, d, err, Format(d), c.want, c.out)
		}
	}
	for _, bad := range []string{"", "d", "3", "1e3d", "infd", "NaNd", "1d-2h", "3 days", "0x1d", "1dd", "--1d", "1_0d",
		"99999d2562047h", "100000d100000d"} { // the last but one overflows an int64 of nanoseconds
		if d, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", bad, d)
		}
	}
}

// FuzzRoundTrip: Parse reads back what Format writes, for every duration;
// and whatever Parse accepts, Format writes so that Parse reads it back
// the same.
func FuzzRoundTrip(f *testing.F) {
	for _, d := range []int64{0, 1, -1, int64(Day), int64(36 * time.Hour), math.MaxInt64, math.MinInt64, 1500 * int64(time.Microsecond)} {
		f.Add(d, "")
	}
	for _, s := range []string{"30d", "1.5d", "1d12h", "-3d", "90s", "+1d", "0.000000000001d", "100000d", "106751.99d", "106752d", "100000d2000000h"} {
		f.Add(int64(0), s)
	}
	f.Fuzz(func(t *testing.T, n int64, s string) {
		d := time.Duration(n)
		text := Format(d)
		got, err := Parse(text)
		if err != nil || got != d {
			t.Fatalf("Parse(Format(%d)) = Parse(%q) = %d, %v", n, text, got, err)
		}
		if p, err := Parse(s); err == nil {
			if again, err := Parse(Format(p)); err != nil || again != p {
				t.Fatalf("Parse(%q) = %d, but Parse(Format(%d)) = Parse(%q) = %d, %v", s, p, p, Format(p), again, err)
			}
		}
	})
}
