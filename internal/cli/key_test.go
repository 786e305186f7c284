package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/internal/cli/clikit"
)

const (
	goodEdifact = "UNA:+.? 'UNB+UNOC:3+SENDER:14+RECIP?+1:14+200101:1200+REF1++++++1'UNH+1+INVOIC:D:96A:UN'UNT+2+1'UNZ+1+REF1'\r\n" +
		"UNB+UNOC:3+SENDER:14+RECIP:14+200101:1200+REF2'UNH+1+INVOIC:D:96A:UN'UNT+2+1'UNZ+1+REF2'"
	badEdifact = "UNB+UNOC:3+SENDER:14+RECIP:14+200101:1200+REF3'UNH+1+INVOIC:D:96A:UN'UNT+2+1'UNZ+3+REF3'"
)

func runKeyCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &clikit.Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(stdin), Getenv: func(string) string { return "" }}
	code = Main(context.Background(), env, append([]string{"key"}, args...))
	return code, out.String(), errb.String()
}

func writeKeyFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestKeyCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeKeyFile(t, dir, "good.edi", goodEdifact)
	bad := writeKeyFile(t, dir, "bad.edi", badEdifact)

	code, out, errOut := runKeyCLI(t, "", good)
	want := good + "\tedifact\tedifact:SENDER|14|RECIP+1|14|REF1|1\n" + good + "\tedifact\tedifact:SENDER|14|RECIP|14|REF2|\n"
	if code != clikit.ExitOK || out != want || errOut != "" {
		t.Errorf("good file: code %d\nstdout %q\nwant   %q\nstderr %q", code, out, want, errOut)
	}

	code, out, errOut = runKeyCLI(t, "", bad, good, filepath.Join(dir, "missing.edi"))
	if code != clikit.ExitUsage {
		t.Errorf("bad file: code %d, want %d", code, clikit.ExitUsage)
	}
	if !strings.Contains(out, "REF1") || strings.Contains(out, "REF3") {
		t.Errorf("stdout %q: want the good file's keys only", out)
	}
	for _, w := range []string{
		"txinbox key: " + bad + ": edifact: UNZ element 0036 at byte 77: control count 3 does not match 1 message\n",
		"txinbox key: " + filepath.Join(dir, "missing.edi") + ": open ",
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr %q\nwant it to contain %q", errOut, w)
		}
	}
}

func TestKeyCommandStdinAndJSON(t *testing.T) {
	t.Parallel()
	code, out, errOut := runKeyCLI(t, goodEdifact, "--json", "-")
	if code != clikit.ExitOK || errOut != "" {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %q", len(lines), out)
	}
	var got keyLine
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	if got.File != "-" || got.Kind != "edifact" || got.Key != "edifact:SENDER|14|RECIP+1|14|REF1|1" || got.Offset != 0 ||
		len(got.Fields) != 6 || got.Fields[2].Name != "recipient" || got.Fields[2].Value != "RECIP+1" {
		t.Errorf("JSON line %+v", got)
	}
}

func TestKeyCommandUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		code int
		want string
	}{
		{nil, clikit.ExitUsage, "txinbox key: no FILE given"},
		{[]string{"--bogus", "x"}, clikit.ExitUsage, "unknown flag --bogus"},
	}
	for _, tt := range tests {
		code, out, errOut := runKeyCLI(t, "", tt.args...)
		if code != tt.code || out != "" || !strings.Contains(errOut, tt.want) {
			t.Errorf("key %q: code %d stdout %q stderr %q; want code %d and stderr containing %q", tt.args, code, out, errOut, tt.code, tt.want)
		}
	}
}

// TestKeyCommandHelp: -h prints the help on stdout (issue 16) and exits 0.
func TestKeyCommandHelp(t *testing.T) {
	t.Parallel()
	code, out, errOut := runKeyCLI(t, "", "-h")
	if code != clikit.ExitOK || errOut != "" || !strings.Contains(out, "Usage: txinbox key [flags] FILE...") {
		t.Errorf("key -h: code %d stdout %q stderr %q", code, out, errOut)
	}
}

func TestKeyCommandCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := Main(ctx, &clikit.Env{Stdout: &out, Stderr: &errb}, []string{"key", "-"})
	if code != clikit.ExitFailure || !strings.Contains(errb.String(), "context canceled") {
		t.Errorf("code %d stderr %q", code, errb.String())
	}
}

// TestKeyCommandSamples runs the command over every shared sample: each
// prints keys or a clear error naming the file, and nothing panics.
func TestKeyCommandSamples(t *testing.T) {
	t.Parallel()
	dir := keySamplesDir(t)
	manifest, err := os.ReadFile(filepath.Join(dir, "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, line := range strings.Split(strings.TrimSpace(string(manifest)), "\n")[1:] {
		name, _, _ := strings.Cut(line, "\t")
		paths = append(paths, filepath.Join(dir, name))
	}
	code, out, errOut := runKeyCLI(t, "", paths...)
	if code != clikit.ExitUsage {
		t.Errorf("code %d, want %d (some samples are refused)", code, clikit.ExitUsage)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 || !strings.HasPrefix(f[2], f[1]+":") {
			t.Errorf("bad output line %q", line)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if !strings.HasPrefix(line, "txinbox key: "+dir) || !strings.Contains(line, " at byte ") && !strings.Contains(line, "unknown format") {
			t.Errorf("error line without file or position: %q", line)
		}
	}
	if !strings.Contains(out, "simple997-multiple-interchanges.edi\tx12\tx12:ZZ|ReceiverID|ZZ|Sender|000000003|P\n") {
		t.Errorf("missing the third X12 interchange in %q", out)
	}
	if !strings.Contains(errOut, "ReceiptMessage.xml: ebms: /S11:Envelope/S11:Header/eb:Messaging/eb:SignalMessage at byte 1180: Receipt signal message") {
		t.Errorf("missing the receipt refusal in %q", errOut)
	}
}

// keySamplesDir returns ../shared/edi/samples next to the repository root,
// or skips the test: the samples are not part of the module.
func keySamplesDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("EDI samples not found: no go.mod above the test directory")
		}
		dir = parent
	}
	samples := filepath.Join(dir, "..", "shared", "edi", "samples")
	if _, err := os.Stat(filepath.Join(samples, "MANIFEST.tsv")); err != nil {
		t.Skip("EDI samples not found: expected ../shared/edi/samples next to the repository root (they are not part of the module)")
	}
	return samples
}

// TestKeyCommandGroupsAndCharsets: an interchange with two functional
// groups is keyed; --json prints UNOC (ISO 8859-1) and UNOE (ISO 8859-5)
// senders decoded, so two senders whose bytes differ print differently,
// while the key keeps the exact bytes.
func TestKeyCommandGroupsAndCharsets(t *testing.T) {
	t.Parallel()
	in := "UNB+UNOC:3+M\xdcLLER:ZZ+R+200101:1200+G2'UNG+ORDERS+S+R+200101:1200+1+UN+D:96A'UNH+1+ORDERS:D:96A:UN'UNT+2+1'UNE+1+1'" +
		"UNG+INVOIC+S+R+200101:1200+2+UN+D:96A'UNH+2+INVOIC:D:96A:UN'UNT+2+2'UNE+1+2'UNZ+2+G2'\n" +
		"UNB+UNOE:3+\xbc\xd8\xdb\xdb\xd5\xe0:ZZ+R+200101:1200+C1'UNH+1+X:D:96A:UN'UNT+2+1'UNZ+1+C1'\n" +
		"UNB+UNOC:3+M\xd6LLER:ZZ+R+200101:1200+C2'UNH+1+X:D:96A:UN'UNT+2+1'UNZ+1+C2'\n"
	code, out, errOut := runKeyCLI(t, in, "--json", "-")
	if code != clikit.ExitOK || errOut != "" {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines: %q", len(lines), out)
	}
	want := []struct{ sender, charset, key string }{
		{"MÜLLER", "ISO-8859-1", "edifact:M%DCLLER|ZZ|R||G2|"},
		{"Миллер", "ISO-8859-5", "edifact:%BC%D8%DB%DB%D5%E0|ZZ|R||C1|"},
		{"MÖLLER", "ISO-8859-1", "edifact:M%D6LLER|ZZ|R||C2|"},
	}
	for i, w := range want {
		var got keyLine
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatal(err)
		}
		if got.Fields[0].Value != w.sender || got.Charset != w.charset || got.Key != w.key {
			t.Errorf("line %d: sender %q charset %q key %q, want %q %q %q", i, got.Fields[0].Value, got.Charset, got.Key, w.sender, w.charset, w.key)
		}
	}
}
