package scan

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestReaderOffsets(t *testing.T) {
	t.Parallel()
	data := "  \r\nabc" + strings.Repeat("x", 3*BufferSize) + "!end"
	r := New(strings.NewReader(data))
	b, err := r.SkipSpace(IsLineSpace)
	if err != nil || b != 'a' || r.Offset() != 4 {
		t.Fatalf("SkipSpace = %q, %v at %d", b, err, r.Offset())
	}
	if c, _ := r.ReadByte(); c != 'a' || r.Offset() != 5 {
		t.Fatalf("ReadByte = %q at %d", c, r.Offset())
	}
	if n, err := r.Discard(2 + 2*BufferSize); err != nil || n != 2+2*BufferSize {
		t.Fatalf("Discard = %d, %v", n, err)
	}
	var skipped int64
	for {
		chunk, err := r.ReadSlice('!')
		skipped += int64(len(chunk))
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull {
			t.Fatal(err)
		}
	}
	if want := int64(len(data) - 3); r.Offset() != want || skipped != BufferSize+1 {
		t.Fatalf("after ReadSlice: offset %d, want %d; skipped %d", r.Offset(), want, skipped)
	}
	rest, _ := io.ReadAll(r)
	if string(rest) != "end" || r.Offset() != int64(len(data)) {
		t.Fatalf("rest %q offset %d", rest, r.Offset())
	}
	if _, err := r.SkipSpace(IsLineSpace); err != io.EOF {
		t.Fatalf("SkipSpace at the end: %v", err)
	}
}

func TestNewReusesBufio(t *testing.T) {
	t.Parallel()
	br := bufio.NewReaderSize(bytes.NewReader([]byte("peeked")), BufferSize)
	if p, _ := br.Peek(3); string(p) != "pee" {
		t.Fatal("peek")
	}
	r := New(br)
	if p, _ := r.Peek(BufferSize + 10); string(p) != "peeked" {
		t.Fatalf("Peek = %q: peeked bytes were lost", p)
	}
}

func TestPrintable(t *testing.T) {
	t.Parallel()
	for b, want := range map[byte]string{'+': "+", ' ': "space", '\r': `\r`, '\n': `\n`, '\t': `\t`, 0x1c: `\x1c`, 0xff: `\xff`} {
		if got := Printable(b); got != want {
			t.Errorf("Printable(%#x) = %q, want %q", b, got, want)
		}
	}
	if !IsAlnum('z') || IsAlnum('+') || !IsLineSpace('\n') || IsLineSpace('x') {
		t.Error("classes")
	}
}
