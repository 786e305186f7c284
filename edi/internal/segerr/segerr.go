// Package segerr formats the envelope errors of the segment-based syntaxes
// (EDIFACT, X12) the same way.
package segerr

import (
	"fmt"
	"strconv"
	"strings"
)

// Format returns "SYNTAX: SEG element ELEM at byte N: MSG", leaving out what
// is empty; a segment tag that is not plain upper-case letters and digits
// is quoted.
func Format(syntax, segment, element string, offset int64, msg string) string {
	var b strings.Builder
	b.WriteString(syntax + ": ")
	if segment != "" {
		b.WriteString(TagString(segment))
		if element != "" {
			b.WriteString(" element ")
			b.WriteString(element)
		}
		b.WriteString(" at")
	} else {
		b.WriteString("at")
	}
	fmt.Fprintf(&b, " byte %d: %s", offset, msg)
	return b.String()
}

// TagString prints a clean segment tag as is and anything else quoted.
func TagString(tag string) string {
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return strconv.Quote(tag)
		}
	}
	return tag
}
