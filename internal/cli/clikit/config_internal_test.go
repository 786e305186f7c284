package clikit

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func configFlags() (*flag.FlagSet, *string, *string, *time.Duration, *bool) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	db := fs.String("db", "", "")
	listen := fs.String("as4-listen", "", "")
	timeout := fs.Duration("shutdown-timeout", time.Second, "")
	noPurge := fs.Bool("no-purge", false, "")
	fs.String("config", "", "")
	return fs, db, listen, timeout, noPurge
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "txinbox.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigPrecedence(t *testing.T) {
	path := writeConfig(t, "# serve settings\ndb: /var/lib/txinbox/inbox.db\nas4-listen: ':8080'\nshutdown-timeout: 45s\nno-purge: true\n")
	fs, db, listen, timeout, noPurge := configFlags()
	if err := fs.Parse([]string{"--as4-listen", "127.0.0.1:9000"}); err != nil {
		t.Fatal(err)
	}
	env := &Env{Getenv: func(k string) string {
		return map[string]string{"TXINBOX_SHUTDOWN_TIMEOUT": "2m"}[k]
	}}
	if err := ApplyConfig(fs, env, path); err != nil {
		t.Fatal(err)
	}
	// The flag beats the file, the environment beats the file, the file
	// beats the default.
	if *listen != "127.0.0.1:9000" || *timeout != 2*time.Minute || *db != "/var/lib/txinbox/inbox.db" || !*noPurge {
		t.Errorf("got db=%q listen=%q timeout=%v no-purge=%v", *db, *listen, *timeout, *noPurge)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	noEnv := &Env{Getenv: func(string) string { return "" }}
	for _, tc := range []struct{ text, want string }{
		{"db: x\nas4-lisen: ':8080'\n", `line 2: unknown setting "as4-lisen"`},
		{"shutdown-timeout: soon\n", "line 1: shutdown-timeout: invalid value"},
		{"db: {a: b}\n", "line 1: db: want a single value or a list"},
		{"db: [a, [b]]\n", "want a list of single values"},
		{"- db\n", "want a mapping"},
		{"db: 'unterminated\n", "txinbox.yaml"},
	} {
		fs, _, _, _, _ := configFlags()
		err := ApplyConfig(fs, noEnv, writeConfig(t, tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.want)
		}
	}
	fs, _, _, _, _ := configFlags()
	badEnv := &Env{Getenv: func(k string) string {
		return map[string]string{"TXINBOX_SHUTDOWN_TIMEOUT": "later"}[k]
	}}
	if err := ApplyConfig(fs, badEnv, ""); err == nil || !strings.Contains(err.Error(), "TXINBOX_SHUTDOWN_TIMEOUT") {
		t.Errorf("bad environment value: %v", err)
	}
	if err := ApplyConfig(fs, noEnv, "/nonexistent/txinbox.yaml"); err == nil || !strings.Contains(err.Error(), "--config") {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzConfigFile: no configuration text makes ApplyConfig panic.
func FuzzConfigFile(f *testing.F) {
	f.Add("db: x\nas4-listen: ':8080'\n")
	f.Add("shutdown-timeout: 1s\nno-purge: yes\n")
	f.Add("{a: [1, {b: c}]}")
	f.Fuzz(func(t *testing.T, text string) {
		fs, _, _, _, _ := configFlags()
		p := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		ApplyConfig(fs, &Env{Getenv: func(string) string { return "" }}, p) //nolint:errcheck // only panics matter
	})
}
