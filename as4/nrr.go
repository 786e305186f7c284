package as4

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
)

// Namespaces of the receipt's content.
const (
	// NamespaceDSig is the XML Signature namespace of ds:Reference.
	NamespaceDSig = "http://www.w3.org/2000/09/xmldsig#"
	// NamespaceEBBP is the ebBP signals namespace of
	// ebbp:NonRepudiationInformation.
	NamespaceEBBP = "http://docs.oasis-open.org/ebxml-bp/ebbp-signals-2.0"
	// namespaceExcC14N is exclusive C14N's, of ec:InclusiveNamespaces.
	namespaceExcC14N = "http://www.w3.org/2001/10/xml-exc-c14n#"
	// namespaceReceiptWrapper wraps the copy of an unsigned user message
	// in a receipt: the ebMS 3.0 header schema admits only elements of
	// other namespaces in eb:Receipt, so eb:UserMessage cannot be its
	// child. This is phase4's wrapper, so that the receipt looks the same
	// to a phase4 partner as one of its own.
	namespaceReceiptWrapper = "urn:fdc:com.helger.phase4:ns:wrapper"
)

// maxNRReferences bounds the ds:Reference elements copied into a receipt.
const maxNRReferences = 1000

// NonRepudiationInformation returns the ebbp:NonRepudiationInformation
// element of a non-repudiation receipt (AS4 profile §5.1.8): one
// ebbp:MessagePartNRInformation for each ds:Reference of the request's
// signature, in order. Each refs entry is one ds:Reference element as
// XML that declares the namespaces it uses (as in a canonical form); it is
// re-serialised with fixed prefixes (ds, ec) and declares the ebbp and ds
// namespaces itself, so it can be placed in eb:Receipt as is.
func NonRepudiationInformation(refs [][]byte) ([]byte, error) {
	if len(refs) == 0 {
		return nil, errors.New("as4: a non-repudiation receipt needs at least one ds:Reference")
	}
	var w xmlWriter
	w.open("ebbp:NonRepudiationInformation", "xmlns:ebbp", NamespaceEBBP, "xmlns:ds", NamespaceDSig)
	for i, ref := range refs {
		w.open("ebbp:MessagePartNRInformation")
		d := xml.NewDecoder(bytes.NewReader(ref))
		start, err := firstElement(d)
		if err == nil && (start.Name.Space != NamespaceDSig || start.Name.Local != "Reference") {
			err = fmt.Errorf("the element is {%s}%s", start.Name.Space, start.Name.Local)
		}
		if err == nil {
			err = copyElement(&w, d, start, map[string]string{NamespaceDSig: "ds"})
		}
		if err != nil {
			return nil, fmt.Errorf("as4: ds:Reference %d: %w", i+1, err)
		}
		w.close("ebbp:MessagePartNRInformation")
	}
	w.close("ebbp:NonRepudiationInformation")
	return []byte(w.b.String()), nil
}

func firstElement(d *xml.Decoder) (xml.StartElement, error) {
	for {
		t, err := d.Token()
		if err != nil {
			return xml.StartElement{}, err
		}
		switch t := t.(type) {
		case xml.StartElement:
			return t, nil
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return xml.StartElement{}, errors.New("text before the element")
			}
		}
	}
}

// copyElement writes the element that start opens, and its content, from
// d with canonical prefixes: declared is the namespaces already declared
// in the output (namespace → prefix); others get ec, or n1, n2 ...,
// declared where first used. Comments and processing instructions are
// dropped.
func copyElement(w *xmlWriter, d *xml.Decoder, start xml.StartElement, declared map[string]string) error {
	type frame struct {
		name     string
		declared map[string]string
	}
	stack := []frame{}
	counter := 0
	open := func(se xml.StartElement, decl map[string]string) (string, map[string]string) {
		scope := decl
		var decls []string
		prefixOf := func(space string) string {
			if p, ok := scope[space]; ok {
				return p
			}
			p := map[string]string{NamespaceDSig: "ds", namespaceExcC14N: "ec"}[space]
			if p == "" || usedPrefix(scope, p) {
				counter++
				p = fmt.Sprintf("n%d", counter)
			}
			if len(scope) == len(decl) {
				scope = make(map[string]string, len(decl)+1)
				for k, v := range decl {
					scope[k] = v
				}
			}
			scope[space] = p
			decls = append(decls, "xmlns:"+p, space)
			return p
		}
		name := se.Name.Local
		if se.Name.Space != "" {
			name = prefixOf(se.Name.Space) + ":" + name
		}
		var attrs []string
		for _, a := range se.Attr {
			if a.Name.Space == "xmlns" || (a.Name.Space == "" && a.Name.Local == "xmlns") {
				continue
			}
			an := a.Name.Local
			switch a.Name.Space {
			case "":
			case "http://www.w3.org/XML/1998/namespace", "xml":
				an = "xml:" + an
			default:
				an = prefixOf(a.Name.Space) + ":" + an
			}
			attrs = append(attrs, an, a.Value)
		}
		w.b.WriteString("<" + name)
		for _, kv := range [][]string{decls, attrs} {
			for i := 0; i+1 < len(kv); i += 2 {
				w.b.WriteString(" " + kv[i] + `="`)
				xml.EscapeText(&w.b, []byte(kv[i+1])) //nolint:errcheck // strings.Builder does not fail
				w.b.WriteString(`"`)
			}
		}
		w.b.WriteString(">")
		return name, scope
	}
	name, scope := open(start, declared)
	stack = append(stack, frame{name, scope})
	for len(stack) > 0 {
		t, err := d.Token()
		if err == io.EOF {
			return errors.New("the element is not closed")
		}
		if err != nil {
			return err
		}
		switch t := t.(type) {
		case xml.StartElement:
			if len(stack) > maxDepth {
				return fmt.Errorf("nested deeper than %d elements", maxDepth)
			}
			name, scope := open(t, stack[len(stack)-1].declared)
			stack = append(stack, frame{name, scope})
		case xml.EndElement:
			w.close(stack[len(stack)-1].name)
			stack = stack[:len(stack)-1]
		case xml.CharData:
			xml.EscapeText(&w.b, t) //nolint:errcheck // strings.Builder does not fail
		}
	}
	return nil
}

// receiptContent writes eb:Receipt's content: the NRR element for a
// signed request, else phase4's wrapper around a copy of the
// eb:UserMessage.
func receiptContent(w *xmlWriter, u *UserMessage, nrr []byte) {
	if len(nrr) > 0 {
		w.b.Write(nrr)
		return
	}
	w.open("wrap:OriginalUserMessage", "xmlns:wrap", namespaceReceiptWrapper)
	w.writeUserMessage(u)
	w.close("wrap:OriginalUserMessage")
}

// signatureReferences reads the ds:Reference elements of
// wsse:Security/ds:Signature/ds:SignedInfo from the decoder positioned
// after the wsse:Security start tag, each as self-contained XML. The
// signature is not verified.
func signatureReferences(d *xml.Decoder) ([][]byte, error) {
	var refs [][]byte
	path := []xml.Name{}
	for {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch t := t.(type) {
		case xml.StartElement:
			if len(path) > maxDepth {
				return nil, fmt.Errorf("wsse:Security is nested deeper than %d elements", maxDepth)
			}
			isRef := len(path) == 2 && t.Name.Space == NamespaceDSig && t.Name.Local == "Reference" &&
				path[0] == xml.Name{Space: NamespaceDSig, Local: "Signature"} && path[1] == xml.Name{Space: NamespaceDSig, Local: "SignedInfo"}
			if isRef && len(refs) < maxNRReferences {
				var w xmlWriter
				if err := copyElement(&w, d, t, map[string]string{}); err != nil {
					return nil, err
				}
				refs = append(refs, []byte(w.b.String()))
				continue
			}
			path = append(path, t.Name)
		case xml.EndElement:
			if len(path) == 0 {
				return refs, nil
			}
			path = path[:len(path)-1]
		}
	}
}

// usedPrefix reports whether a prefix is bound in scope.
func usedPrefix(scope map[string]string, p string) bool {
	for _, q := range scope {
		if q == p {
			return true
		}
	}
	return false
}
