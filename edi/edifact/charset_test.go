package edifact

import (
	"testing"
	"unicode/utf8"
)

func TestDecodeText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ syntax, in, want, charset string }{
		{"UNOA", "ABC", "ABC", "ASCII"},
		{"UNOB", "abc", "abc", "ASCII"},
		{"UNOC", "M\xfcller", "Müller", "ISO-8859-1"},
		{"unoc", "\xe9", "é", "ISO-8859-1"},
		{"UNOD", "\xb3\xf3d\xbc", "łódź", "ISO-8859-2"},
		{"UNOE", "\xbc\xd8\xe0", "Мир", "ISO-8859-5"},
		{"UNOF", "\xc1\xe8\xde\xed\xe1", "Αθήνα", "ISO-8859-7"},
		{"UNOK", "\xddstanbul", "İstanbul", "ISO-8859-9"},
		{"UNOL", "\xa4", "€", "ISO-8859-15"},
		{"UNOW", "Grüße", "Grüße", "UTF-8"},
		{"UNOY", "日本", "日本", "UTF-8"},
		{"UNOA", "Gr\xfc\xdfe", "Grüße", "ASCII"}, // declared ASCII, sent Latin-1
		{"UNOA", "Grüße", "Grüße", "ASCII"},       // declared ASCII, sent UTF-8
		{"UNOY", "Gr\xfc\xdfe", "Grüße", "UTF-8"}, // invalid UTF-8: Latin-1
		{"IATA", "\xe9t\xe9", "été", ""},          // unknown set
		{"UNOX", "caf\xc3\xa9", "café", ""},       // ISO 2022: not decoded; valid UTF-8 shown as such
	} {
		if got := DecodeText(tt.syntax, tt.in); got != tt.want {
			t.Errorf("DecodeText(%s, %q) = %q, want %q", tt.syntax, tt.in, got, tt.want)
		}
		if got := Charset(tt.syntax); got != tt.charset {
			t.Errorf("Charset(%s) = %q, want %q", tt.syntax, got, tt.charset)
		}
	}
}

func FuzzDecodeText(f *testing.F) {
	for _, s := range []string{"UNOA", "UNOC", "UNOE", "UNOI", "UNOJ", "UNOY", "X"} {
		f.Add(s, "M\xfcller\x00\xff")
	}
	f.Fuzz(func(t *testing.T, syntax, value string) {
		if got := DecodeText(syntax, value); !utf8.ValidString(got) || (value != "" && got == "") {
			t.Fatalf("DecodeText(%q, %q) = %q", syntax, value, got)
		}
	})
}
