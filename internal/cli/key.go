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
	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// keyCommand is txinbox key.
type keyCommand struct{ json bool }

func (c *keyCommand) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "key", Args: "FILE...", Summary: "print the inbox key of EDIFACT, X12 and AS4 files",
		Description: `Prints FILE<TAB>KIND<TAB>KEY for each EDIFACT or X12 interchange and each AS4
user message; KEY is the inbox message id. FILE - reads stdin.`,
		Examples: []clikit.Example{{Command: "txinbox key invoice.edi"}, {Command: "cat as4-message.mime | txinbox key --json -", What: "named fields as JSON"}},
		ExitCodes: []clikit.ExitCode{{Code: clikit.ExitOK, What: "every file yielded a key"}, {Code: clikit.ExitFailure, What: "the output could not be written, or the command was stopped"},
			{Code: clikit.ExitUsage, What: "bad flags, no FILE, or a file that yields no key (reported on stderr)"}}}
}

func (c *keyCommand) Define(fs *clikit.FlagSet, _ *clikit.Env) {
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

// Run prints FILE, KIND and KEY (the inbox message id) for every
// interchange or AS4 user message in the files; "-" is stdin. A file that
// yields no key is reported on stderr and makes the status ExitUsage.
func (c *keyCommand) Run(ctx context.Context, in *clikit.Invocation) int {
	env := in.Env
	status := clikit.ExitOK
	for _, name := range in.Args {
		if err := ctx.Err(); err != nil {
			fmt.Fprintf(env.Stderr, "txinbox key: %v\n", err)
			return clikit.ExitFailure
		}
		keys, err := keysOf(env, name)
		if err != nil {
			fmt.Fprintf(env.Stderr, "txinbox key: %s: %v\n", name, err)
			status = clikit.ExitUsage
			continue
		}
		if err := printKeys(env.Stdout, name, keys, c.json); err != nil {
			fmt.Fprintf(env.Stderr, "txinbox key: writing output: %v\n", err)
			return clikit.ExitFailure
		}
	}
	return status
}

// keysOf reads the keys of one file, or of stdin for "-".
func keysOf(env *clikit.Env, name string) ([]edi.Key, error) {
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
