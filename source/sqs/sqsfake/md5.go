package sqsfake

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"
)

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// md5OfAttributes is SQS's digest of message attributes: for each
// attribute in name order, the length-prefixed name, data type, a
// transport byte (1 string, 2 binary) and length-prefixed value.
func md5OfAttributes(attrs map[string]MessageAttribute) string {
	if len(attrs) == 0 {
		return ""
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	slices.Sort(names)
	h := md5.New()
	field := func(b []byte) {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(b))))
		h.Write(b)
	}
	for _, n := range names {
		a := attrs[n]
		field([]byte(n))
		field([]byte(a.DataType))
		if strings.HasPrefix(a.DataType, "Binary") {
			h.Write([]byte{2})
			field(a.BinaryValue)
		} else {
			h.Write([]byte{1})
			field([]byte(a.StringValue))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
