package testkit

import "testing"

// TestGetenv: the new name wins; the old one is read only when the new
// one is unset or empty; no old name reads nothing else.
func TestGetenv(t *testing.T) {
	const name, old = "TXINBOX_TEST_TESTKIT_X", "TXINBOX_TESTKIT_X"
	t.Setenv(old, "old")
	t.Setenv(name, "")
	if got := Getenv(name, old); got != "old" {
		t.Errorf("new name empty: Getenv = %q, want the old name's %q", got, "old")
	}
	if got := Getenv(name, ""); got != "" {
		t.Errorf("no old name: Getenv = %q, want \"\"", got)
	}
	t.Setenv(name, "new")
	if got := Getenv(name, old); got != "new" {
		t.Errorf("both set: Getenv = %q, want the new name's %q", got, "new")
	}
}

// TestRandomName: the prefix, 12 hex digits, and another name each call.
func TestRandomName(t *testing.T) {
	a, b := RandomName("t_"), RandomName("t_")
	if len(a) != 14 || a[:2] != "t_" || a == b {
		t.Errorf("RandomName = %q, %q; want t_ and 12 hex digits, different each call", a, b)
	}
}
