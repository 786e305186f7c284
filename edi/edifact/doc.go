// Package edifact reads the envelopes of UN/EDIFACT interchanges (ISO 9735
// syntax versions 1 to 4) from a stream, without loading the interchange.
//
// A Reader returns one Interchange per UNB…UNZ in the input. For each it
// reads the optional UNA service string advice (all six service characters),
// decodes the UNB with the release character honoured, and then walks the
// segments only as far as needed to check the envelope: UNG/UNE groups,
// UNH/UNT messages and the UNZ control count and reference. Segment content
// other than the service segments is skipped without being kept, so memory
// stays bounded whatever the size of the interchange.
//
// Line breaks (CR, LF) that are not declared service characters are ignored
// everywhere, so interchanges wrapped at a fixed column and files with one
// segment per line read the same. Bytes before the first UNA or UNB (a
// proprietary header) are skipped if the envelope starts within the first
// 64 KiB.
//
// Every malformed envelope is reported as a *SyntaxError naming the segment,
// the data element and the byte offset.
package edifact
