package v1alpha1_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/exporterset/exporterset/internal/testing/testenv"
)

// seedFields reads the field table of the ExporterSet API seed: path -> description.
func seedFields(t *testing.T) map[string]string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(root), "shared", "seeds", "000_*.txt"))
	if len(matches) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the API seed is missing from ../shared/seeds")
		}
		t.Skip("skipped: the API seed is not beside the repository")
	}
	f, err := os.Open(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fields := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) == 3 && strings.HasPrefix(cols[0], "`") {
			fields[strings.Trim(cols[0], "`")] = cols[2]
		}
	}
	if len(fields) < 40 {
		t.Fatalf("read only %d fields from the seed", len(fields))
	}
	return fields
}

// lookup walks the CRD schema along a dotted path (with [] for list items).
func lookup(s apiextensionsv1.JSONSchemaProps, path string) (apiextensionsv1.JSONSchemaProps, bool) {
	for _, part := range strings.Split(path, ".") {
		name, item := strings.CutSuffix(part, "[]")
		p, ok := s.Properties[name]
		if !ok {
			return p, false
		}
		s = p
		if item {
			if s.Items == nil || s.Items.Schema == nil {
				return s, false
			}
			s = *s.Items.Schema
		}
	}
	return s, true
}

// normalizeDoc folds the typography differences between the seed's rendering and Go comments.
func normalizeDoc(s string) string {
	r := strings.NewReplacer("“", `"`, "”", `"`, "’", "'", "\n", " ", "  ", " ")
	return strings.Join(strings.Fields(r.Replace(s)), " ")
}

// Every seed field has a kubectl-explain description, and it says what the seed says.
func TestCRDDescribesEverySeedField(t *testing.T) {
	fields := seedFields(t)
	dir, err := testenv.CRDDir("bases")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "virtualtarget.jumpstarter.dev_exportersets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	schema := *crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	for path, seedDoc := range fields {
		s, ok := lookup(schema, path)
		if !ok {
			t.Errorf("%s: not in the generated CRD", path)
			continue
		}
		// The seed shows a field's default after its description; the CRD has it as a default.
		want := normalizeDoc(seedDoc)
		if i := strings.Index(want, " (default: "); i >= 0 {
			want = want[:i]
		}
		got := normalizeDoc(s.Description)
		if !strings.Contains(got, want) {
			t.Errorf("%s: description\n  %q\ndoes not contain the seed's\n  %q", path, got, want)
		}
	}
}
