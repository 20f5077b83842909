package host_test

import (
	"strings"
	"testing"

	"github.com/exporterset/exporterset/provisioner/plugin/host"
)

func TestParseSHA256Sums(t *testing.T) {
	a, b := strings.Repeat("0a", 32), strings.Repeat("B1", 32)
	got, err := host.ParseSHA256Sums([]byte("# pinned plugins\n" + a + "  ./plugins/exporterset-provisioner-a\n\n" + b + " *exporterset-provisioner-b\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["exporterset-provisioner-a"] != a || got["exporterset-provisioner-b"] != strings.ToLower(b) {
		t.Errorf("got %v", got)
	}
	for _, bad := range []string{"nothex  exporterset-provisioner-a", a, "abcd  exporterset-provisioner-a", a + "  x\n" + b + "  x"} {
		if _, err := host.ParseSHA256Sums([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
