package exporterset_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/exporterset/exporterset/"

// Imports run one way: the front (exporterset) wires the controllers; a controller
// (exporterset/internal/controllers/<name>) imports neither the front nor another
// controller; the shared packages below them import no controller and not the front; the
// pure packages (pool, budget) import none of the above.
func TestImportDirection(t *testing.T) {
	controllers := "exporterset/internal/controllers/"
	checked := 0
	for _, dir := range libraryPackages(t) {
		for _, imp := range importsOf(t, dir) {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to := strings.TrimPrefix(imp, module)
			checked++
			switch {
			case dir == "exporterset":
				// the front imports everything below it
			case to == "exporterset":
				t.Errorf("%s imports the front (%s)", dir, to)
			case strings.HasPrefix(dir, controllers) && strings.HasPrefix(to, controllers):
				t.Errorf("controller %s imports controller %s", dir, to)
			case strings.HasPrefix(to, controllers):
				t.Errorf("%s, below the controllers, imports controller %s", dir, to)
			case (dir == "exporterset/pool" || dir == "exporterset/budget") && strings.HasPrefix(to, "exporterset/internal/"):
				t.Errorf("pure package %s imports %s", dir, to)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no imports of the module found: the check proves nothing")
	}
}

// importsOf are the import paths of the non-test Go files of dir (a path from the
// repository's root).
func importsOf(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out = append(out, p)
		}
	}
	return out
}
