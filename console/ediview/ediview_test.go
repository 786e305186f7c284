package ediview_test

import (
	"errors"
	"testing"

	"github.com/txinbox/txinbox/console"
	"github.com/txinbox/txinbox/console/ediview"
)

func TestRead(t *testing.T) {
	x12 := "ISA*00*          *00*          *ZZ*S              *ZZ*R              *200101*1200*^*00501*000000001*0*P*:~IEA*0*000000001~"
	keys, err := ediview.Read([]byte(x12))
	if err != nil || len(keys) != 1 {
		t.Fatalf("Read(X12) = %+v, %v; want one key", keys, err)
	}
	k := keys[0]
	if k.Kind != "x12" || k.ID == "" || k.Charset != "" || len(k.Fields) == 0 || k.Fields[0].Name == "" {
		t.Errorf("Read(X12) = %+v: want kind x12, an id, named fields, no charset", k)
	}
	edifact := "UNB+UNOC:3+SENDER1:14+RECEIVER1:14+261201:1200+INV42++INVOIC'UNZ+0+INV42'"
	keys, err = ediview.Read([]byte(edifact))
	if err != nil || len(keys) != 1 || keys[0].Kind != "edifact" || keys[0].Charset != "ISO-8859-1" {
		t.Errorf("Read(EDIFACT) = %+v, %v; want one edifact key in ISO-8859-1", keys, err)
	}
	keys, err = ediview.Read([]byte("just text"))
	if !errors.Is(err, console.ErrNotEDI) || len(keys) != 0 {
		t.Errorf("Read(text) = %+v, %v; want no key and console.ErrNotEDI", keys, err)
	}
}
