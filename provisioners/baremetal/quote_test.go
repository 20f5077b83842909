package baremetal

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// nasty are arguments a shell would mangle if they were not quoted.
var nasty = []string{
	"plain", "with space", "it's", `"double"`, `a'b"c`, "semi;colon", "$(echo pwned)",
	"`id`", "$HOME", "*", "~", "-n", "", "new\nline", "tab\there", `back\slash`, "'", "''", "!bang", "a|b&c>d<e",
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":      "''",
		"abc":   "'abc'",
		"it's":  `'it'\''s'`,
		"'":     `''\'''`,
		"$(x)":  "'$(x)'",
		"a b;c": "'a b;c'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	if _, err := QuoteArgv(nil); err == nil {
		t.Error("QuoteArgv(nil) must fail")
	}
	if _, err := QuoteArgv([]string{"echo", "a\x00b"}); err == nil {
		t.Error("QuoteArgv with a NUL must fail")
	}
}

// TestQuoteArgvRoundTrip hands the quoted string to a real sh, as sshd does, and checks the
// program receives exactly the argv, and that no command substitution ran.
func TestQuoteArgvRoundTrip(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh: ", err)
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	args := append(append([]string{}, nasty...), "$(touch "+marker+")", "; touch "+marker)
	cmd, err := QuoteArgv(append([]string{"printf", `%s\0`}, args...))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sh, "-c", cmd).Output()
	if err != nil {
		t.Fatalf("sh -c %s: %v", cmd, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if d := cmp.Diff(args, got); d != "" {
		t.Errorf("argv after the shell (-sent +received):\n%s", d)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("%s exists: an argument was executed", marker)
	}
}
