package edi_test

import (
	"fmt"
	"strings"

	"github.com/txinbox/txinbox/edi"
)

func ExampleKeys() {
	in := "UNA:+.? '" +
		"UNB+UNOC:3+5790000274017:14+5708601000836:14+990420:1137+17++INVOIC++++1'" +
		"UNH+30+INVOIC:D:03B:UN'BGM+380+539602'UNT+3+30'" +
		"UNZ+1+17'"
	keys, err := edi.Keys(strings.NewReader(in))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, k := range keys {
		fmt.Println(k.ID)
		fmt.Println(k)
	}
	// Output:
	// edifact:5790000274017|14|5708601000836|14|17|1
	// edifact sender=5790000274017 sender_qualifier=14 recipient=5708601000836 recipient_qualifier=14 control_ref=17 test_indicator=1
}

func ExampleKeys_error() {
	in := "UNB+UNOA:3+SENDER+RECIPIENT+000101:0000+REF'" +
		"UNH+1+ORDERS:D:96A:UN'UNT+2+1'" +
		"UNZ+2+REF'"
	_, err := edi.Keys(strings.NewReader(in))
	fmt.Println(err)
	// Output:
	// edifact: UNZ element 0036 at byte 74: control count 2 does not match 1 message
}

func ExampleDecodeID() {
	kind, values, err := edi.DecodeID("as4:POP000306|urn:fdc:peppol.eu:2017:identifiers:ap|id%7C1@x")
	fmt.Println(kind, values, err)
	// Output:
	// as4 [POP000306 urn:fdc:peppol.eu:2017:identifiers:ap id|1@x] <nil>
}
