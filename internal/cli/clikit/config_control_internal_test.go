package clikit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigControlCharacterLine: a control character YAML refuses is
// named with its line and column, not only the file.
func TestConfigControlCharacterLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ text, want string }{
		{"db: x\nscope: ok\nretention: 30d\a\n", "line 3 column 15: control character U+0007"},
		{"db: \"é\x01\"\n", "line 1 column 7: control character U+0001"},
		{"\ufeffdb: x\n\tscope: \u0085\u009f\n", "line 2 column 10: control character U+009F"},
	} {
		path := filepath.Join(t.TempDir(), "txinbox.yaml")
		if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := readConfigMapping(path)
		if err == nil || !strings.Contains(err.Error(), "config "+path+" "+tc.want) {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.want)
		}
	}
}
