package edifact

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// Character sets of the syntax identifiers (ISO 9735 S001/0001; see
// docs/edi-keys.md): the name Charset returns and the decoder of each.
var charsets = map[string]struct {
	name string
	cm   *charmap.Charmap // nil: ASCII or UTF-8
}{
	"UNOA": {"ASCII", nil}, // level A, a subset of ISO 646
	"UNOB": {"ASCII", nil}, // level B, ISO 646 without national positions
	"UNOC": {"ISO-8859-1", charmap.ISO8859_1},
	"UNOD": {"ISO-8859-2", charmap.ISO8859_2},
	"UNOE": {"ISO-8859-5", charmap.ISO8859_5},
	"UNOF": {"ISO-8859-7", charmap.ISO8859_7},
	"UNOG": {"ISO-8859-3", charmap.ISO8859_3},
	"UNOH": {"ISO-8859-4", charmap.ISO8859_4},
	"UNOI": {"ISO-8859-6", charmap.ISO8859_6},
	"UNOJ": {"ISO-8859-8", charmap.ISO8859_8},
	"UNOK": {"ISO-8859-9", charmap.ISO8859_9},
	"UNOL": {"ISO-8859-15", charmap.ISO8859_15},
	"UNOW": {"UTF-8", nil}, // ISO/IEC 10646 with code extension: UTF-8
	"UNOY": {"UTF-8", nil}, // ISO/IEC 10646 without code extension: UTF-8 in practice
}

// Charset returns the character set of a syntax identifier (S001/0001),
// e.g. "ISO-8859-1" for UNOC: "ASCII" for UNOA and UNOB, "UTF-8" for UNOW
// and UNOY, "" for others (UNOX's ISO 2022 escapes, IATA, agreed sets).
func Charset(syntax string) string { return charsets[strings.ToUpper(strings.TrimSpace(syntax))].name }

// DecodeText returns a value of an interchange whose syntax identifier is
// syntax as text, for display: decoded from the ISO 8859 part the
// identifier names. Declared sets are often wrong in practice, so an
// ASCII or UTF-8 set whose value is not valid in it, and an unknown set,
// are read as UTF-8 if valid and else as ISO 8859-1: the text is always
// valid UTF-8, and a byte outside ASCII no longer prints as U+FFFD (bytes
// an ISO 8859 part leaves undefined still do). The interchange key stays
// the exact bytes; this is only for printing.
func DecodeText(syntax, value string) string {
	cs := charsets[strings.ToUpper(strings.TrimSpace(syntax))]
	if cs.cm != nil {
		s, err := cs.cm.NewDecoder().String(value)
		if err == nil {
			return s
		}
	}
	if utf8.ValidString(value) {
		return value
	}
	s, _ := charmap.ISO8859_1.NewDecoder().String(value)
	return s
}
