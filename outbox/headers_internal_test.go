package outbox

import (
	"slices"
	"testing"
)

// FuzzHeaders checks that any headers survive EncodeHeaders and
// DecodeHeaders as they were, and that DecodeHeaders, given any bytes,
// returns headers or an error, never panics.
func FuzzHeaders(f *testing.F) {
	f.Add("k", "v", []byte(`[{"key":"a","value":"b"}]`))
	f.Add("k", "\x00\xff", []byte(`{"a":"b"}`))
	f.Add("", "", []byte(`[{"key":"a","value_base64":"AP8="}]`))
	f.Add("a", "b", []byte(`[{"key":"a","value":"b","value_base64":"AP8="}]`))
	f.Fuzz(func(t *testing.T, k, v string, raw []byte) {
		DecodeHeaders(raw) //nolint:errcheck // must only not panic
		hs := []Header{{Key: k, Value: v}, {Key: k, Value: v + v}}
		s, err := EncodeHeaders(hs)
		if err != nil {
			if jsonSafe(k) {
				t.Fatalf("EncodeHeaders(%q) = %v", hs, err)
			}
			return
		}
		got, err := DecodeHeaders([]byte(s))
		if err != nil || !slices.Equal(got, hs) {
			t.Fatalf("round trip of %q through %s = %q, %v", hs, s, got, err)
		}
	})
}
