package exporterset_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docs/layout.md is the map a maintainer reads first: it must name every non-test Go file of
// the library, each under its package's paragraph, and nothing that does not exist; every
// path of its tables must exist too.
func TestLayoutDocIsTrue(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	tick := regexp.MustCompile("`([^`]+)`")
	// The package paragraphs: a line (or the table after it) that starts with a package's
	// directory names that package's files.
	named := map[string][]string{} // package dir -> Go files named under it
	dir := ""
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "## ") {
			dir = ""
		}
		if m := regexp.MustCompile("^`(exporterset(/[a-z/]+)?)/`").FindStringSubmatch(line); m != nil {
			dir = m[1]
		}
		if f, ok := strings.CutPrefix(line, "| `"); ok && strings.HasPrefix(strings.Split(line, "|")[1], " `") {
			// A path in the first column of a table must exist.
			if p, _, ok := strings.Cut(f, "`"); ok && !strings.HasSuffix(p, ".go") {
				for _, one := range strings.Split(p, "`, `") {
					if _, err := os.Stat(filepath.Join("..", one)); err != nil {
						t.Errorf("docs/layout.md lists %s, which does not exist", one)
					}
				}
			}
		}
		if dir == "" {
			continue
		}
		for _, m := range tick.FindAllStringSubmatch(line, -1) {
			if name := m[1]; strings.HasSuffix(name, ".go") {
				named[dir] = append(named[dir], name)
			}
		}
	}
	pkgs := libraryPackages(t)
	if len(pkgs) < 8 {
		t.Fatalf("found only the packages %v: the walk is broken", pkgs)
	}
	for _, d := range pkgs {
		for _, name := range named[d] {
			if _, err := os.Stat(filepath.Join("..", d, name)); err != nil {
				t.Errorf("docs/layout.md names %s/%s, which does not exist", d, name)
			}
		}
		files, err := filepath.Glob(filepath.Join("..", d, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("no Go files in %s: the check would prove nothing", d)
		}
		for _, f := range files {
			if base := filepath.Base(f); !strings.HasSuffix(base, "_test.go") && !slices.Contains(named[d], base) {
				t.Errorf("docs/layout.md does not name %s/%s", d, base)
			}
		}
	}
}

// libraryPackages are the directories under exporterset/ that hold non-test Go files, as
// paths from the repository's root: a new package is checked without being listed here.
func libraryPackages(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			dir := filepath.ToSlash(filepath.Join("exporterset", filepath.Dir(path)))
			if !slices.Contains(out, dir) {
				out = append(out, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
