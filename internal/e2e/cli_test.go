package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/suite"
)

// smallestCase returns the smallest public case of op in the embedded suite.
func smallestCase(t testing.TB, suiteName, op string) string {
	t.Helper()
	r, err := manifests.LookupSuite(suiteName)
	if err != nil {
		t.Fatal(err)
	}
	best, bestBytes := "", int64(-1)
	for _, c := range r.Cases {
		if c.Op != op || c.Split != manifests.SplitPublic {
			continue
		}
		n, err := suite.EstimateBytes(c)
		if err != nil {
			t.Fatal(err)
		}
		if bestBytes < 0 || n < bestBytes {
			best, bestBytes = c.ID, n
		}
	}
	if best == "" {
		t.Fatalf("%s has no public %s case", suiteName, op)
	}
	return best
}

// copyTree copies the regular files under src to dst.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// editManifest rewrites the JSON of the manifest at src into dst after
// edit changes it (as a generic document, so every field survives).
func editManifest(t testing.TB, src, dst string, edit func(m map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCLIExitCodes runs the real binary on good and bad input and checks
// the documented exit codes (0 ok, 1 error, 2 usage, 3 failed check) and
// that the messages name what is wrong.
func TestCLIExitCodes(t *testing.T) {
	g := nativeGoldset(t)
	const timeout = 2 * time.Minute
	base := t.TempDir()
	pa := smallestCase(t, "stage2-paged", "paged_attention")
	rc := smallestCase(t, "stage2-paged", "reshape_and_cache")
	sel := selection{suite: "stage2-paged", cases: []string{rc, pa}}
	a := filepath.Join(base, "a")
	mustRun(t, g, timeout, sel.genArgs(a)...)
	bundle := filepath.Join(a, sel.suite)
	m := readManifest(t, bundle)
	paCase := m.Case(pa)
	if paCase == nil || paCase.Tensor("out") == nil || paCase.Tensor("lse") == nil {
		t.Fatalf("case %s lacks out or lse tensors", pa)
	}
	outPath := filepath.Join(bundle, filepath.FromSlash(paCase.Tensor("out").Path))
	lsePath := filepath.Join(bundle, filepath.FromSlash(paCase.Tensor("lse").Path))

	type check struct {
		name   string
		args   []string
		code   int
		stdout string // substring wanted in stdout ("" for none)
		stderr string // substring wanted in stderr
	}
	checks := []check{
		{"unknown suite", []string{"gen", "no-such-suite", "--out", filepath.Join(base, "x")}, 2, "", "no-such-suite"},
		{"unknown command", []string{"no-such-command"}, 2, "", "unknown command"},
		{"unknown flag", []string{"gen", "stage2-paged", "--no-such-flag"}, 2, "", "no-such-flag"},
		{"non-numeric --jobs", []string{"gen", "stage2-paged", "--jobs", "many", "--out", filepath.Join(base, "x")}, 2, "", "many"},
		{"bad --shard", []string{"gen", "stage2-paged", "--shard", "3/2", "--out", filepath.Join(base, "x")}, 2, "", "--shard"},
		{"--case with two suites", []string{"gen", "stage1-basic", "stage2-paged", "--case", pa, "--out", filepath.Join(base, "x")}, 2, "", "--case"},
		{"verify without a bundle", []string{"verify"}, 2, "", "arg"},
		{"verify a good bundle", []string{"verify", bundle}, 0, "OK", ""},
		{"verify a missing bundle", []string{"verify", filepath.Join(base, "nowhere")}, 1, "", "nowhere"},
		{"compare the golden with itself", []string{"compare", bundle, "--case", pa, "--output", "out=" + outPath, "--output", "lse=" + lsePath}, 0, "PASS", ""},
		{"compare one output of two", []string{"compare", bundle, "--case", pa, "--output", "out=" + outPath}, 2, "", "missing --output for lse"},
		{"compare one output of two, --partial", []string{"compare", bundle, "--case", pa, "--output", "out=" + outPath, "--partial"}, 0, "skipped (--partial, not judged): lse", ""},
		{"compare a missing case", []string{"compare", bundle, "--case", "no-such-case", "--output", "out=" + outPath}, 2, "", "no-such-case"},
		{"compare an unknown output", []string{"compare", bundle, "--case", pa, "--output", "nope=" + outPath}, 2, "", "nope"},
		{"compare a malformed --output", []string{"compare", bundle, "--case", pa, "--output", outPath}, 2, "", "NAME=FILE"},
		{"compare a wrong-shape candidate", []string{"compare", bundle, "--case", pa, "--output", "out=" + lsePath, "--partial"}, 3, "shape", ""},
	}
	notNpy := filepath.Join(base, "not.npy")
	if err := os.WriteFile(notNpy, []byte("these are not the bytes of a .npy file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	checks = append(checks, check{"compare a file that is not .npy", []string{"compare", bundle, "--case", pa, "--output", "out=" + notNpy, "--partial"}, 1, "", "not.npy"})

	// verify of tampered bundles: a flipped bit, a missing file.
	flipped := filepath.Join(base, "flipped")
	copyTree(t, bundle, flipped)
	victim := filepath.Join(flipped, filepath.FromSlash(paCase.Tensor("out").Path))
	b, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	if err := os.WriteFile(victim, b, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(base, "missing")
	copyTree(t, bundle, missing)
	if err := os.Remove(filepath.Join(missing, filepath.FromSlash(paCase.Tensor("lse").Path))); err != nil {
		t.Fatal(err)
	}
	checks = append(checks,
		check{"verify a flipped bit", []string{"verify", flipped}, 3, paCase.Tensor("out").Path, ""},
		check{"verify a missing file", []string{"verify", missing}, 3, paCase.Tensor("lse").Path, ""},
	)

	// gen --from: a newer schema, another tool version, an edited hash.
	manifest := filepath.Join(bundle, "manifest.json")
	newer := filepath.Join(base, "newer.json")
	editManifest(t, manifest, newer, func(m map[string]any) { m["schema_version"] = 99 })
	otherVersion := filepath.Join(base, "other-version.json")
	editManifest(t, manifest, otherVersion, func(m map[string]any) {
		m["provenance"].(map[string]any)["version"] = "v0.0.1-e2e-other"
	})
	edited := filepath.Join(base, "edited-hash.json")
	editManifest(t, manifest, edited, func(m map[string]any) {
		for _, c := range m["cases"].([]any) {
			c := c.(map[string]any)
			if c["id"] != pa {
				continue
			}
			for _, tn := range c["tensors"].([]any) {
				tn := tn.(map[string]any)
				if tn["name"] == "lse" {
					tn["sha256"] = strings.Repeat("ab", 32)
				}
			}
		}
	})
	checks = append(checks,
		check{"gen --from a newer schema", []string{"gen", "--from", newer, "--out", filepath.Join(base, "from-newer"), "--quiet"}, 3, "", "newer"},
		check{"gen --from another tool version", []string{"gen", "--from", otherVersion, "--out", filepath.Join(base, "from-other"), "--quiet"}, 0, "OK", "warning: manifest was written by goldset v0.0.1-e2e-other"},
		check{"gen --from an edited hash", []string{"gen", "--from", edited, "--out", filepath.Join(base, "from-edited"), "--quiet"}, 3, paCase.Tensor("lse").Path, ""},
	)

	// diff: an identical rebuild, and a bundle with one case fewer.
	same := filepath.Join(base, "same")
	mustRun(t, g, timeout, sel.genArgs(same, "--jobs", "1")...)
	fewer := filepath.Join(base, "fewer")
	mustRun(t, g, timeout, selection{suite: sel.suite, cases: []string{pa}}.genArgs(fewer)...)
	checks = append(checks,
		check{"diff identical bundles", []string{"diff", bundle, filepath.Join(same, sel.suite)}, 0, "", ""},
		check{"diff different bundles", []string{"diff", bundle, filepath.Join(fewer, sel.suite)}, 3, rc, ""},
	)

	// Output directories that cannot be written.
	regular := filepath.Join(base, "file.txt")
	if err := os.WriteFile(regular, []byte("a regular file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fileTarget := filepath.Join(base, "file-target")
	if err := os.MkdirAll(fileTarget, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fileTarget, sel.suite), []byte("not a bundle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(base, "foreign")
	precious := filepath.Join(foreign, sel.suite, "precious.txt")
	if err := os.MkdirAll(filepath.Dir(precious), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(precious, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	checks = append(checks,
		check{"out below a regular file", selection{sel.suite, []string{pa}}.genArgs(filepath.Join(regular, "sub")), 1, "", "not a directory"},
		check{"target is a regular file", selection{sel.suite, []string{pa}}.genArgs(fileTarget), 1, "", "not a goldset bundle"},
		check{"target is a foreign directory", selection{sel.suite, []string{pa}}.genArgs(foreign), 1, "", "not a goldset bundle"},
	)

	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, g, timeout, c.args...)
			if r.code != c.code {
				t.Fatalf("want exit %d, got %v", c.code, r)
			}
			if !strings.Contains(r.stdout, c.stdout) {
				t.Errorf("stdout lacks %q: %v", c.stdout, r)
			}
			if !strings.Contains(r.stderr, c.stderr) {
				t.Errorf("stderr lacks %q: %v", c.stderr, r)
			}
			if c.code == 1 && strings.TrimSpace(r.stderr) == "" {
				t.Errorf("exit 1 without a message: %v", r)
			}
		})
	}

	if b, err := os.ReadFile(precious); err != nil || string(b) != "keep me\n" {
		t.Errorf("gen touched a foreign directory at its target: %q, %v", b, err)
	}
	if left := leftovers(t, foreign); len(left) > 0 {
		t.Errorf("temporary directories left beside a refused target: %v", left)
	}
	if fileExists(filepath.Join(base, "from-newer")) {
		t.Error("gen --from a newer schema created its output directory")
	}
}
