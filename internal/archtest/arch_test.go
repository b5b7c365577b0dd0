package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// rule is one row of ARCHITECTURE.md's import table.
type rule struct {
	pkg   string   // a package, or a subtree ending in "/..."
	allow []string // patterns of packages it may import; "*" is any
	line  int
}

// matches reports whether pattern names pkg: the package itself, or with
// "/..." any package in that subtree.
func matches(pattern, pkg string) bool {
	if pattern == "*" {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pattern == pkg
}

// specificity orders rules: an exact package beats a subtree, and a
// longer subtree beats a shorter one.
func specificity(pattern string) int {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return 2 * len(base)
	}
	return 2*len(pattern) + 1
}

var cell = regexp.MustCompile("`([^`]+)`")

// parseTable reads the rows between the archtest markers.
func parseTable(doc string) ([]rule, error) {
	_, rest, ok := strings.Cut(doc, "<!-- archtest:begin -->")
	if !ok {
		return nil, errors.New("no <!-- archtest:begin --> marker")
	}
	table, _, ok := strings.Cut(rest, "<!-- archtest:end -->")
	if !ok {
		return nil, errors.New("no <!-- archtest:end --> marker")
	}
	first := strings.Count(doc[:len(doc)-len(rest)], "\n") + 1
	var rules []rule
	for i, line := range strings.Split(table, "\n") {
		cols := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cols) != 3 || !strings.Contains(cols[0], "`") {
			continue // the header, its rule, blank lines
		}
		pkg := cell.FindStringSubmatch(cols[0])
		r := rule{pkg: pkg[1], line: first + i}
		for _, m := range cell.FindAllStringSubmatch(cols[2], -1) {
			if m[1] != "-" {
				r.allow = append(r.allow, m[1])
			}
		}
		rules = append(rules, r)
	}
	if len(rules) == 0 {
		return nil, errors.New("the table between the markers has no rows")
	}
	return rules, nil
}

// ruleFor returns the most specific rule naming pkg.
func ruleFor(rules []rule, pkg string) (rule, bool) {
	var best rule
	found := false
	for _, r := range rules {
		if matches(r.pkg, pkg) && (!found || specificity(r.pkg) > specificity(best.pkg)) {
			best, found = r, true
		}
	}
	return best, found
}

// listed is the part of go list's JSON the test reads.
type listed struct {
	ImportPath string
	Imports    []string
}

// modulePackages runs go list on the whole module and returns each
// package's non-test imports of the module's own packages, with paths
// relative to the module.
func modulePackages(t *testing.T, root string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	mod := modulePath(t, root)
	pkgs := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		rel, ok := relative(mod, p.ImportPath)
		if !ok {
			continue
		}
		var own []string
		for _, imp := range p.Imports {
			if r, ok := relative(mod, imp); ok {
				own = append(own, r)
			}
		}
		pkgs[rel] = own
	}
	return pkgs
}

func relative(mod, path string) (string, bool) {
	if path == mod {
		return ".", true
	}
	return strings.CutPrefix(path, mod+"/")
}

func modulePath(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	t.Fatal("go.mod names no module")
	return ""
}

// root is the module's root: two floors above this package.
func root(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func readRules(t *testing.T, root string) []rule {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := parseTable(string(doc))
	if err != nil {
		t.Fatalf("ARCHITECTURE.md: %v", err)
	}
	return rules
}

// check returns one line per package go list shows importing what its
// rule does not allow, or that no rule names.
func check(rules []rule, pkgs map[string][]string) []string {
	var problems []string
	for pkg, imports := range pkgs {
		r, ok := ruleFor(rules, pkg)
		if !ok {
			problems = append(problems, pkg+": no row of ARCHITECTURE.md's import table names it")
			continue
		}
		for _, imp := range imports {
			allowed := false
			for _, a := range r.allow {
				allowed = allowed || matches(a, imp)
			}
			if !allowed {
				problems = append(problems, pkg+" imports "+imp+", which its row ("+r.pkg+", ARCHITECTURE.md line "+strconv.Itoa(r.line)+") does not allow")
			}
		}
	}
	return problems
}

// TestArchitecture_GoList_MatchesTheImportTable fails when a package
// imports a module package its row of ARCHITECTURE.md does not allow, or
// when a package has no row.
func TestArchitecture_GoList_MatchesTheImportTable(t *testing.T) {
	root := root(t)
	rules := readRules(t, root)
	pkgs := modulePackages(t, root)
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages, want the whole module", len(pkgs))
	}
	for _, p := range check(rules, pkgs) {
		t.Error(p)
	}
}

// TestArchitecture_Table_EveryRowNamesAPackage keeps the table free of
// rows for packages that no longer exist.
func TestArchitecture_Table_EveryRowNamesAPackage(t *testing.T) {
	root := root(t)
	pkgs := modulePackages(t, root)
	for _, r := range readRules(t, root) {
		used := false
		for pkg := range pkgs {
			used = used || matches(r.pkg, pkg)
		}
		if !used {
			t.Errorf("ARCHITECTURE.md line %d: row %s names no package of the module", r.line, r.pkg)
		}
	}
}

// TestCheck_UpwardImport_IsReported proves the checker itself: a driver
// that imports the engine, and a package with no row, are both found.
func TestCheck_UpwardImport_IsReported(t *testing.T) {
	rules, err := parseTable("<!-- archtest:begin -->\n| Package | Floor | May import |\n|---|---|---|\n" +
		"| `backend` | 4 | `-` |\n| `backend/...` | 5 | `backend` |\n| `syncer` | 2 | `backend/...` |\n<!-- archtest:end -->\n")
	if err != nil {
		t.Fatal(err)
	}
	got := check(rules, map[string][]string{
		"backend":    nil,
		"backend/fs": {"backend", "syncer"},
		"syncer":     {"backend", "backend/fs"},
		"serve":      {"syncer"},
	})
	if len(got) != 2 || !strings.Contains(strings.Join(got, "\n"), "backend/fs imports syncer") || !strings.Contains(strings.Join(got, "\n"), "serve: no row") {
		t.Errorf("check = %q, want exactly backend/fs imports syncer and serve has no row", got)
	}
}
