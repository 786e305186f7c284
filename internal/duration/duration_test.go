package duration

import (
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
	} {
		if got := Format(tc.d); got != tc.want {
			t.Errorf("Format(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
