// Package x12 reads the envelopes of ANSI ASC X12 interchanges (ISA…IEA)
// from a stream, without loading the interchange.
//
// The ISA segment is fixed-width: 106 characters with the data element
// separator at character 4, the component separator at character 105 and
// the segment terminator at character 106. The Reader takes the separators
// from the ISA itself (a multi-byte UTF-8 terminator such as "…" is
// accepted), checks every element has its fixed width, then walks the
// segments to check the envelope: GS/GE groups (GE01 count, GE02 = GS06),
// ST/SE sets (SE02 = ST02) and the IEA (IEA01 group count, IEA02 = ISA13).
// Other segments are skipped without being kept; BIN and BDS binary data is
// skipped by its declared length. Memory stays bounded whatever the size of
// the interchange.
//
// Line breaks that are not the segment terminator are ignored inside
// segments, so ISA segments wrapped at 80 columns read correctly. The
// release character of version 007040 and later (ISX) is not supported.
//
// Every malformed envelope is reported as a *SyntaxError naming the segment,
// the element and the byte offset.
package x12
