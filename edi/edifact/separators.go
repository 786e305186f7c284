package edifact

import (
	"fmt"

	"github.com/txinbox/txinbox/edi/internal/scan"
)

// Separators are the service characters of an interchange, from its UNA or
// the defaults.
type Separators struct {
	Component  byte // UNA1, default ':'
	Element    byte // UNA2, default '+'
	Decimal    byte // UNA3, '.' or ','
	Release    byte // UNA4, default '?'; 0 when there is none (space in UNA4)
	Repetition byte // UNA5, syntax version 4 only (default '*'); 0 when none
	Segment    byte // UNA6, default '\''
}

// DefaultSeparators are the level A service characters used when an
// interchange has no UNA. Repetition is set to '*' for syntax version 4.
var DefaultSeparators = Separators{Component: ':', Element: '+', Decimal: '.', Release: '?', Segment: '\''}

// UNA returns the service string advice declaring s, e.g. "UNA:+.? '".
func (s Separators) UNA() string {
	rel, rep := s.Release, s.Repetition
	if rel == 0 {
		rel = ' '
	}
	if rep == 0 {
		rep = ' '
	}
	return string([]byte{'U', 'N', 'A', s.Component, s.Element, s.Decimal, rel, rep, s.Segment})
}

// parseUNA decodes the six characters after "UNA". The repetition
// character is kept as declared; applyVersion decides whether it is active.
func parseUNA(c []byte) Separators {
	s := Separators{Component: c[0], Element: c[1], Decimal: c[2], Release: c[3], Repetition: c[4], Segment: c[5]}
	if s.Release == ' ' {
		s.Release = 0 // v1-3: space means no release character
	}
	if s.Repetition == ' ' {
		s.Repetition = 0
	}
	return s
}

// sniffSeparators guesses the separators of an interchange without UNA from
// the bytes starting at "UNB": the byte after the tag is the data element
// separator and the byte after the four-letter syntax identifier is the
// component separator. Level B files using the information separators
// (IS3 after the tag) get IS1/IS4 as component separator and terminator.
func sniffSeparators(p []byte) Separators {
	s := DefaultSeparators
	var clean []byte // the first bytes without line breaks
	for _, b := range p {
		if b != '\r' && b != '\n' {
			clean = append(clean, b)
		}
		if len(clean) == 9 {
			break
		}
	}
	if len(clean) < 4 || !isSeparator(clean[3]) {
		return s
	}
	s.Element = clean[3]
	if s.Element == 0x1d {
		s.Component, s.Segment = 0x1f, 0x1c
	}
	if len(clean) == 9 && isSeparator(clean[8]) && clean[8] != s.Element {
		s.Component = clean[8]
	}
	if s.Segment == s.Element || s.Segment == s.Component {
		s.Segment = 0x1c // keep the three distinct; the UNB check reports the rest
	}
	if s.Release == s.Element || s.Release == s.Component {
		s.Release = 0
	}
	return s
}

func isSeparator(b byte) bool { return !scan.IsAlnum(b) && b != ' ' }

// applyVersion activates the repetition separator for syntax version 4
// and checks the service characters again with it.
func (s *Separators) applyVersion(version string, hasUNA bool) error {
	if version != "4" {
		s.Repetition = 0 // UNA5 is reserved before version 4
	} else if !hasUNA {
		s.Repetition = '*'
	}
	return s.check()
}

// check reports service characters that cannot work: a letter or digit, or
// one character in two roles.
func (s *Separators) check() error {
	roles := []struct {
		name string
		c    byte
	}{
		{"UNA1 component separator", s.Component}, {"UNA2 data element separator", s.Element},
		{"UNA4 release character", s.Release}, {"UNA5 repetition separator", s.Repetition},
		{"UNA6 segment terminator", s.Segment},
	}
	for i, r := range roles {
		if r.c == 0 {
			continue
		}
		if scan.IsAlnum(r.c) {
			return fmt.Errorf("%s is %q: a letter or digit cannot be a service character", r.name, r.c)
		}
		for _, o := range roles[i+1:] {
			if o.c == r.c {
				return fmt.Errorf("%s and %s are both %s", r.name, o.name, scan.Printable(r.c))
			}
		}
	}
	return nil
}

// isService reports whether b is one of the active service characters.
func (s *Separators) isService(b byte) bool {
	return b == s.Component || b == s.Element || b == s.Segment ||
		(s.Release != 0 && b == s.Release) || (s.Repetition != 0 && b == s.Repetition)
}
