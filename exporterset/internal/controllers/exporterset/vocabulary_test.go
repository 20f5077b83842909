package exporterset

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exporterset/exporterset/exporterset/pool"
)

// TestVocabularyMatchesBehaviour: every condition reason the API declares and every event
// reason internal/eventlog declares is set somewhere in the controllers' code. A reason declared
// and never set documents a behaviour that does not exist.
func TestVocabularyMatchesBehaviour(t *testing.T) {
	// The controllers' code: the front and the instance controller.
	code := productionCode(t, ".") + productionCode(t, "../instance")
	for _, c := range []struct{ file, typ, qualifier string }{
		{"../../../../api/v1alpha1/conditions.go", "ConditionReason", "vtv1alpha1."},
		{"../../eventlog/eventlog.go", "Reason", "eventlog."},
	} {
		names := constantsOfType(t, c.file, c.typ)
		if len(names) < 5 {
			t.Fatalf("%s: found only %d constants of type %s; the test no longer reads it", c.file, len(names), c.typ)
		}
		for _, name := range names {
			uses := strings.Count(code, c.qualifier+name)
			if c.qualifier == "" {
				uses-- // its declaration
			}
			if uses < 1 {
				t.Errorf("%s %s is declared but never set", c.typ, name)
			}
		}
	}
}

// productionCode is the text of the package's non-test Go files.
func productionCode(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// constantsOfType lists the constants of type typ declared in file.
func constantsOfType(t *testing.T, file, typ string) (names []string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Type == nil {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); ok && id.Name == typ {
			for _, n := range vs.Names {
				names = append(names, n.Name)
			}
		}
		return true
	})
	return names
}

// TestFailureReasonsComplete: every reason this package gives a Problem is among
// pool.FailureReasons, whose failure counters are exported at zero from a set's first pass.
func TestFailureReasonsComplete(t *testing.T) {
	known := map[string]bool{}
	for _, r := range pool.FailureReasons() {
		known["vtv1alpha1.Reason"+string(r)] = true
	}
	code := productionCode(t, ".")
	found := 0
	for _, part := range strings.Split(code, "Problem{Reason: ")[1:] {
		name := part[:strings.IndexAny(part, ", }")]
		found++
		if !known[name] {
			t.Errorf("%s is a Problem's reason but not among pool.FailureReasons: its failure counter appears only at its first failure", name)
		}
	}
	if found < 5 {
		t.Fatalf("found only %d Problem reasons in the code; the test no longer reads it", found)
	}
}
