package edifact

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// writeSample writes one interchange with two messages through w.
func writeSample(t *testing.T, w *Writer, h Header) {
	t.Helper()
	steps := []func() error{
		func() error { return w.BeginInterchange(h) },
		func() error { return w.BeginMessage("1", Element{"INVOIC", "D", "96A", "UN"}) },
		func() error { return w.Segment("BGM", Element{"380"}, Element{"INV+1:2'3?"}, Element{"9"}) },
		func() error { return w.Segment("FTX", Element{"AAI"}, nil, nil, Element{"a", "", "c"}, nil) },
		func() error { return w.EndMessage() },
		func() error { return w.BeginMessage("2", Element{"INVOIC", "D", "96A", "UN"}) },
		func() error { return w.EndMessage() },
		func() error { return w.EndInterchange() },
	}
	for i, s := range steps {
		if err := s(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
}

func TestWriterOutput(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	w := NewWriter(&b, Separators{})
	writeSample(t, w, Header{Syntax: "UNOC", Version: "3", Sender: Party{ID: "S+1", Qualifier: "14"},
		Recipient: Party{ID: "R:2", Qualifier: "ZZ"}, Date: "260101", Time: "1200", ControlRef: "C'1", TestIndicator: "1"})
	want := "UNA:+.? '" +
		"UNB+UNOC:3+S?+1:14+R?:2:ZZ+260101:1200+C?'1++++++1'" +
		"UNH+1+INVOIC:D:96A:UN'BGM+380+INV?+1?:2?'3??+9'FTX+AAI+++a::c'UNT+4+1'" +
		"UNH+2+INVOIC:D:96A:UN'UNT+2+2'" +
		"UNZ+2+C?'1'"
	if b.String() != want {
		t.Fatalf("got  %s\nwant %s", b.String(), want)
	}
	ic := parseOne(t, b.String())
	if got := strings.Join(ic.Key(), "|"); got != "S+1|14|R:2|ZZ|C'1|1" {
		t.Errorf("key read back = %q", got)
	}
	if ic.Messages != 2 || w.Messages() != 2 {
		t.Errorf("messages: read %d, written %d", ic.Messages, w.Messages())
	}
}

func TestWriterVersion4Repetition(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	w := NewWriter(&b, DefaultSeparators)
	writeSample(t, w, Header{Syntax: "UNOC", Version: "4", Sender: Party{ID: "A*B"}, Recipient: Party{ID: "R"},
		Date: "20260101", Time: "1200", ControlRef: "7"})
	if !strings.HasPrefix(b.String(), "UNA:+.?*'UNB+UNOC:4+A?*B+R+") {
		t.Fatalf("version 4 output: %s", b.String())
	}
	if ic := parseOne(t, b.String()); ic.Sender.ID != "A*B" {
		t.Errorf("sender read back %q", ic.Sender.ID)
	}
}

func TestWriterErrors(t *testing.T) {
	t.Parallel()
	good := Header{Syntax: "UNOC", Version: "3", Sender: Party{ID: "S"}, Recipient: Party{ID: "R"}, Date: "260101", Time: "1200", ControlRef: "1"}
	tests := []struct {
		name    string
		sep     Separators
		run     func(w *Writer) error
		segment string
		element string
	}{
		{"no sender", Separators{}, func(w *Writer) error { h := good; h.Sender.ID = ""; return w.BeginInterchange(h) }, "UNB", "S002/0004"},
		{"long control ref", Separators{}, func(w *Writer) error { h := good; h.ControlRef = "123456789012345"; return w.BeginInterchange(h) }, "UNB", "0020"},
		{"bad version", Separators{}, func(w *Writer) error { h := good; h.Version = "5"; return w.BeginInterchange(h) }, "UNB", "S001/0002"},
		{"line break in UNB", Separators{}, func(w *Writer) error { h := good; h.Recipient.ID = "R\n"; return w.BeginInterchange(h) }, "UNB", "S003/0010"},
		{"separator twice", Separators{Component: '+', Element: '+', Segment: '\'', Release: '?'}, func(w *Writer) error { return w.BeginInterchange(good) }, "UNA", ""},
		{"segment before message", Separators{}, func(w *Writer) error {
			w.BeginInterchange(good) //nolint:errcheck // the next call reports
			return w.Segment("BGM", Element{"380"})
		}, "BGM", ""},
		{"service segment", Separators{}, func(w *Writer) error {
			w.BeginInterchange(good)                                 //nolint:errcheck // the next call reports
			w.BeginMessage("1", Element{"INVOIC", "D", "96A", "UN"}) //nolint:errcheck // the next call reports
			return w.Segment("UNZ", Element{"1"})
		}, "UNZ", ""},
		{"bad tag", Separators{}, func(w *Writer) error {
			w.BeginInterchange(good)                                 //nolint:errcheck // the next call reports
			w.BeginMessage("1", Element{"INVOIC", "D", "96A", "UN"}) //nolint:errcheck // the next call reports
			return w.Segment("bg", Element{"1"})
		}, "bg", ""},
		{"no release character", Separators{Component: ':', Element: '+', Segment: '\''}, func(w *Writer) error {
			w.BeginInterchange(good)                                 //nolint:errcheck // the next call reports
			w.BeginMessage("1", Element{"INVOIC", "D", "96A", "UN"}) //nolint:errcheck // the next call reports
			return w.Segment("FTX", Element{"a"}, Element{"x", "b+c"})
		}, "FTX", "2:2"},
		{"unclosed message", Separators{}, func(w *Writer) error {
			w.BeginInterchange(good)                                 //nolint:errcheck // the next call reports
			w.BeginMessage("1", Element{"INVOIC", "D", "96A", "UN"}) //nolint:errcheck // the next call reports
			return w.EndInterchange()
		}, "UNZ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := NewWriter(&bytes.Buffer{}, tt.sep)
			err := tt.run(w)
			var we *WriteError
			if !errors.As(err, &we) || we.Segment != tt.segment || we.Element != tt.element || we.Msg == "" {
				t.Fatalf("error = %v (%+v), want segment %q element %q", err, we, tt.segment, tt.element)
			}
			if w.EndInterchange() != err || w.Err() != err {
				t.Errorf("the error is not sticky")
			}
		})
	}
}

// FuzzWriter writes an interchange with fuzzed UNB values, separators and
// message content, and reads it back with the Reader: what the Writer
// accepts must read back to the same key (trailing spaces trimmed, as the
// Reader does), with the right message count; what it refuses must be a
// *WriteError.
func FuzzWriter(f *testing.F) {
	f.Add("SENDER", "RECIP", "REF1", "free text", byte(':'), byte('+'), byte('?'), byte('\''), byte('*'), uint8(3), uint8(1))
	f.Add("A+B", "C:D", "E'F", "G?H*I", byte(':'), byte('+'), byte('?'), byte('\''), byte('*'), uint8(4), uint8(2))
	f.Add("x=y", "~", "?", "", byte('='), byte('*'), byte(' '), byte('~'), byte(' '), uint8(2), uint8(0))
	f.Add("é\xff", "\x1c", "1 ", "\x00", byte(0x1f), byte(0x1d), byte('?'), byte(0x1c), byte('!'), uint8(1), uint8(3))
	f.Fuzz(func(t *testing.T, sender, recipient, ref, text string, comp, elem, rel, seg, rep byte, version, messages uint8) {
		sep := Separators{Component: comp, Element: elem, Decimal: '.', Release: rel, Repetition: rep, Segment: seg}
		if rel == ' ' {
			sep.Release = 0
		}
		v := strconv.Itoa(int(version%4) + 1)
		h := Header{Syntax: "UNOC", Version: v, Sender: Party{ID: sender, Qualifier: "14"}, Recipient: Party{ID: recipient},
			Date: "260101", Time: "1200", ControlRef: ref}
		var b bytes.Buffer
		w := NewWriter(&b, sep)
		n := int(messages % 4)
		err := w.BeginInterchange(h)
		for i := 0; i < n && err == nil; i++ {
			if err = w.BeginMessage(strconv.Itoa(i+1), Element{"INVOIC", "D", "96A", "UN"}); err == nil {
				if err = w.Segment("FTX", Element{"AAI"}, nil, nil, Element{text, sender}); err == nil {
					err = w.EndMessage()
				}
			}
		}
		if err == nil {
			err = w.EndInterchange()
		}
		if err != nil {
			var we *WriteError
			if !errors.As(err, &we) || we.Msg == "" {
				t.Fatalf("error %v (%T) is not a *WriteError", err, err)
			}
			return
		}
		ics, err := Parse(bytes.NewReader(b.Bytes()))
		if err != nil || len(ics) != 1 {
			t.Fatalf("written interchange does not read back: %v (%d)\n%q", err, len(ics), b.String())
		}
		ic := ics[0]
		trim := func(s string) string { return strings.TrimRight(s, " ") }
		if ic.Sender.ID != trim(sender) || ic.Recipient.ID != trim(recipient) || ic.ControlRef != trim(ref) || ic.Messages != n {
			t.Fatalf("read back sender %q recipient %q ref %q messages %d, wrote %q %q %q %d\n%q",
				ic.Sender.ID, ic.Recipient.ID, ic.ControlRef, ic.Messages, sender, recipient, ref, n, b.String())
		}
		if ic.End != int64(b.Len()) {
			t.Fatalf("interchange ends at %d of %d bytes", ic.End, b.Len())
		}
	})
}
