package edi

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/edi/ebms"
	"github.com/txinbox/txinbox/edi/edifact"
	"github.com/txinbox/txinbox/edi/internal/testsamples"
	"github.com/txinbox/txinbox/edi/x12"
)

func FuzzKeys(f *testing.F) {
	for _, s := range testsamples.Seeds("") {
		f.Add(s)
	}
	for _, s := range []string{
		"UNB+UNOA:3+S+R+000101:0000+1'UNH+1+X'UNT+2+1'UNZ+1+1'",
		"ISA*00*          *00*          *ZZ*S              *ZZ*R              *200101*1200*^*00501*000000001*0*P*:~IEA*0*000000001~",
		"Content-Type: text/xml\r\n\r\n<a/>",
		"DOC+1'UNA:+.? 'UNB+UNOA:1+S+R+0:0+1'UNZ+0+1'",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := Keys(bytes.NewReader(data))
		if (err == nil) == (keys == nil) {
			t.Fatalf("keys %v with error %v: want exactly one of them", keys, err)
		}
		if err != nil {
			checkTyped(t, err)
			return
		}
		for _, k := range keys {
			kind, vals, derr := DecodeID(k.ID)
			if derr != nil || kind != k.Kind || !strings.HasPrefix(k.ID, string(k.Kind)+":") || len(vals) != len(k.Fields) {
				t.Fatalf("bad key %+v: %v", k, derr)
			}
			for i, f := range k.Fields {
				if f.Value != vals[i] || f.Name != FieldNames(kind)[i] {
					t.Fatalf("field %d of %+v does not match its ID", i, k)
				}
			}
			if k.Offset < 0 {
				t.Fatalf("negative offset in %+v", k)
			}
		}
	})
}

func checkTyped(t *testing.T, err error) {
	t.Helper()
	var (
		es *edifact.SyntaxError
		xs *x12.SyntaxError
		ee *ebms.Error
		sg *ebms.SignalError
		fe *ebms.FaultError
	)
	if !errors.Is(err, ErrUnknownFormat) && !errors.As(err, &es) && !errors.As(err, &xs) &&
		!errors.As(err, &ee) && !errors.As(err, &sg) && !errors.As(err, &fe) {
		t.Fatalf("untyped error %v (%T)", err, err)
	}
}
