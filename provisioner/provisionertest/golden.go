package provisionertest

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Golden compares got with the golden file at path, or (update, from a test's -update flag)
// rewrites the file with got. A missing file fails, naming the flag that creates it.
func Golden(t testing.TB, path, got string, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-golden +got); run with -update if the change is intended:\n%s", path, diff)
	}
}
