package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/txinbox/txinbox/edi"
	"github.com/txinbox/txinbox/edi/edifact"
)

// keyCommand is txinbox key.
type keyCommand struct{ json bool }

func (c *keyCommand) info() commandInfo {
	return commandInfo{Name: "key", Args: "FILE...", Summary: "print the inbox key of EDIFACT, X12 and AS4 files",
		Description: `Prints FILE<TAB>KIND<TAB>KEY for each EDIFACT or X12 interchange and each AS4
user message; KEY is the inbox message id. FILE - reads stdin.`,
		Examples: []example{{"txinbox key invoice.edi", ""}, {"cat as4-message.mime | txinbox key --json -", "named fields as JSON"}},
		ExitCodes: []exitCode{{ExitOK, "every file yielded a key"}, {ExitFailure, "the output could not be written, or the command was stopped"},
			{ExitUsage, "bad flags, no FILE, or a file that yields no key (reported on stderr)"}}}
}

func (c *keyCommand) define(fs *flagSet, _ *Env) {
	fs.BoolVar(&c.json, "json", false, "print one JSON object per key: file, kind, key, fields, offset")
}

// keyLine is one --json output line.
type keyLine struct {
	File   string      `json:"file"`
	Kind   edi.Kind    `json:"kind"`
	Key    string      `json:"key"`
	Fields []edi.Field `json:"fields"`
	Offset int64       `json:"offset"`
	// Charset is the character set the EDIFACT field values were decoded
	// from (the syntax identifier's), "" otherwise.
	Charset string `json:"charset,omitempty"`
}

// run prints FILE, KIND and KEY (the inbox message id) for every
// interchange or AS4 user message in the files; "-" is stdin. A file that
// yields no key is reported on stderr and makes the status ExitUsage.
func (c *keyCommand) run(ctx context.Context, in *invocation) int {
	env := in.env
	status := ExitOK
	for _, name := range in.args {
		if err := ctx.Err(); err != nil {
			fmt.Fprintf(env.Stderr, "txinbox key: %v\n", err)
			return ExitFailure
		}
		keys, err := keysOf(env, name)
		if err != nil {
			fmt.Fprintf(env.Stderr, "txinbox key: %s: %v\n", name, err)
			status = ExitUsage
			continue
		}
		if err := printKeys(env.Stdout, name, keys, c.json); err != nil {
			fmt.Fprintf(env.Stderr, "txinbox key: writing output: %v\n", err)
			return ExitFailure
		}
	}
	return status
}

// keysOf reads the keys of one file, or of stdin for "-".
func keysOf(env *Env, name string) ([]edi.Key, error) {
	if name == "-" {
		if env.Stdin == nil {
			return nil, errors.New("no standard input")
		}
		return edi.Keys(env.Stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return edi.Keys(f)
}

func printKeys(w io.Writer, name string, keys []edi.Key, asJSON bool) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, k := range keys {
		var err error
		if asJSON {
			err = enc.Encode(keyLine{File: name, Kind: k.Kind, Key: k.ID, Fields: k.Text(), Charset: charsetOf(k), Offset: k.Offset})
		} else {
			_, err = fmt.Fprintf(w, "%s\t%s\t%s\n", name, k.Kind, k.ID)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// charsetOf names the character set of an EDIFACT key's printed values.
func charsetOf(k edi.Key) string {
	if k.Kind != edi.KindEDIFACT {
		return ""
	}
	if cs := edifact.Charset(k.Syntax); cs != "" {
		return cs
	}
	return "UTF-8 or ISO-8859-1 (syntax " + k.Syntax + ")"
}
