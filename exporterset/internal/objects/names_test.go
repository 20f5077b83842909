package objects

import (
	"strings"
	"testing"
)

// Names are a pure function of the set's UID and sequence, short enough for a Pod hostname
// with the config Secret's suffix, and differ between sequence numbers and between sets.
func TestInstanceName(t *testing.T) {
	long := strings.Repeat("a", 39) + "-" + strings.Repeat("b", 30) // cut at 40: a trailing dash
	a := InstanceName("pool", "uid-1", 7)
	if a != InstanceName("pool", "uid-1", 7) {
		t.Fatal("the same set and sequence gave two names")
	}
	if a == InstanceName("pool", "uid-1", 8) || a == InstanceName("pool", "uid-2", 7) {
		t.Errorf("%s given twice", a)
	}
	if !strings.HasPrefix(a, "pool-") {
		t.Errorf("%s does not start with its set's name", a)
	}
	n := InstanceName(long, "uid-1", 1)
	if got := len(ConfigSecretName(n)); got > 63 {
		t.Errorf("config Secret name %q is %d characters", ConfigSecretName(n), got)
	}
	if strings.Contains(n, "--") {
		t.Errorf("%s: the cut prefix keeps a trailing dash", n)
	}
}
