package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/goldset/goldset/internal/testenv"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/suite"
)

// binDir holds the binaries built by this test run; removed by TestMain.
var binDir string

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "goldset-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	binDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

// requireTools reports whether missing tools must fail tests (CI) rather
// than skip them.
func requireTools() bool { return testenv.RequireTools() }

// skipOrFail skips t with why, or fails it when GOLDSET_REQUIRE_TOOLS=1.
func skipOrFail(t testing.TB, why string) {
	t.Helper()
	testenv.SkipOrFail(t, "%s", why)
}

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

// repoRoot finds the module root above the test's working directory.
func repoRoot(t testing.TB) string {
	t.Helper()
	rootOnce.Do(func() {
		d, err := os.Getwd()
		if err != nil {
			rootErr = err
			return
		}
		for {
			b, err := os.ReadFile(filepath.Join(d, "go.mod"))
			if err == nil && bytes.Contains(b, []byte("module github.com/goldset/goldset\n")) {
				rootDir = d
				return
			}
			parent := filepath.Dir(d)
			if parent == d {
				rootErr = errors.New("no go.mod of github.com/goldset/goldset above the working directory")
				return
			}
			d = parent
		}
	})
	if rootErr != nil {
		t.Fatal(rootErr)
	}
	return rootDir
}

// goTool returns the go command (go test puts its own first on PATH).
func goTool(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go command not found: %v", err)
	}
	return p
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// buildEnv is the environment for the go command: the caller's, with the
// target selected explicitly and cgo off (static binaries run under qemu).
func buildEnv(goarch, goamd64 string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOARCH", "GOAMD64", "GOARM64", "GOOS", "CGO_ENABLED":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0")
	if goamd64 != "" {
		env = append(env, "GOAMD64="+goamd64)
	}
	return env
}

// runEnv is the environment for goldset: the caller's without the
// variables that change what gen builds (hidden secret, shard indices).
func runEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOLDSET_HIDDEN_SECRET", "JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "GOLDSET_SHARDS":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// goldset is a built goldset binary and how to start it.
type goldset struct {
	name   string   // variant, e.g. "amd64-v3"
	path   string   // the binary
	prefix []string // emulator command line, empty for native
	env    []string // extra environment (e.g. GODEBUG), after runEnv's
}

func (g goldset) command(ctx context.Context, args ...string) *exec.Cmd {
	argv := append(slices.Clone(g.prefix), g.path)
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(runEnv(), g.env...)
	return cmd
}

var (
	buildMu sync.Mutex
	built   = map[string]string{}
)

// buildGoldset builds ./cmd/goldset for linux/goarch (GOAMD64=goamd64 when
// set) once per test run.
func buildGoldset(t testing.TB, goarch, goamd64 string) string {
	t.Helper()
	return buildGoldsetTags(t, goarch, goamd64, "")
}

// buildGoldsetTags is buildGoldset with build tags (e.g. "purego").
func buildGoldsetTags(t testing.TB, goarch, goamd64, tags string) string {
	t.Helper()
	key := goarch + "-" + goamd64
	if tags != "" {
		key += "-" + tags
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := built[key]; ok {
		return p
	}
	out := filepath.Join(binDir, "goldset-"+key)
	start := time.Now()
	cmd := exec.Command(goTool(t), "build", "-tags="+tags, "-o", out, "./cmd/goldset")
	cmd.Dir = repoRoot(t)
	cmd.Env = buildEnv(goarch, goamd64)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags=%q ./cmd/goldset (GOARCH=%s GOAMD64=%s): %v\n%s", tags, goarch, goamd64, err, b)
	}
	t.Logf("built goldset for %s in %.1fs", key, time.Since(start).Seconds())
	built[key] = out
	return out
}

// nativeGoldset builds the binary for the host.
func nativeGoldset(t testing.TB) goldset {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the end-to-end tests run on linux only")
	}
	return goldset{name: "native", path: buildGoldset(t, runtime.GOARCH, "")}
}

// result is the outcome of one goldset run.
type result struct {
	args           []string
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("goldset %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// run runs g to completion (at most timeout) and returns its exit code and output.
func run(t testing.TB, g goldset, timeout time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := g.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		r.code = ee.ExitCode()
	default:
		t.Fatalf("goldset %s (%s): %v (timeout %v)\n%s", strings.Join(args, " "), g.name, err, timeout, stderr.String())
	}
	return r
}

// mustRun runs g and fails t unless it exits 0.
func mustRun(t testing.TB, g goldset, timeout time.Duration, args ...string) result {
	t.Helper()
	r := run(t, g, timeout, args...)
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	return r
}

// wantCode fails t unless r exited with code.
func wantCode(t testing.TB, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Errorf("want exit %d, got %v", code, r)
	}
}

// treeHashes returns the sha256 of every regular file under dir, keyed
// by slash-separated relative path.
func treeHashes(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// leftovers lists the temporary and moved-aside directories of bundle
// writers in dir.
func leftovers(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.Contains(e.Name(), ".goldset-tmp-") || strings.Contains(e.Name(), ".goldset-old-") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// readManifest reads a bundle's manifest and fails t when it cannot.
func readManifest(t testing.TB, bundle string) *manifests.Manifest {
	t.Helper()
	m, err := manifests.ReadManifest(bundle)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// caseArgs returns "--case ID" pairs.
func caseArgs(ids []string) []string {
	var a []string
	for _, id := range ids {
		a = append(a, "--case", id)
	}
	return a
}

// selection is a reduced set of cases of one embedded suite.
type selection struct {
	suite string
	cases []string
}

func (s selection) genArgs(out string, extra ...string) []string {
	a := append([]string{"gen", s.suite, "--out", out, "--quiet", "--split", "public,benchmark,edge"}, caseArgs(s.cases)...)
	return append(a, extra...)
}

// smallSelection picks from the embedded suite name, for every (op, dtype)
// pair, the smallest public or benchmark case, and for every op the
// smallest case with "hostile" set (NaN-poisoned unused slots), skipping
// cases estimated above maxBytes. Choosing by size rather than by id
// keeps the selection op- and dtype-complete when recipes change.
func smallSelection(t testing.TB, name string, maxBytes int64) selection {
	t.Helper()
	r, err := manifests.LookupSuite(name)
	if err != nil {
		t.Fatal(err)
	}
	type pick struct {
		id    string
		bytes int64
	}
	best := map[string]pick{}
	consider := func(key, id string, n int64) {
		if p, ok := best[key]; !ok || n < p.bytes || n == p.bytes && id < p.id {
			best[key] = pick{id, n}
		}
	}
	for _, c := range r.Cases {
		if c.Split == manifests.SplitHidden {
			continue
		}
		n, err := suite.EstimateBytes(c)
		if err != nil {
			t.Fatalf("%s/%s: %v", name, c.ID, err)
		}
		if n > maxBytes {
			continue
		}
		var p struct {
			DType   string `json:"dtype"`
			Hostile bool   `json:"hostile"`
			Layout  string `json:"layout"` // dsa_indexer: paged or ragged
		}
		json.Unmarshal(c.Params, &p)
		consider(c.Op+"/"+p.DType+p.Layout, c.ID, n)
		if c.Split == manifests.SplitEdge {
			consider(c.Op+"/edge", c.ID, n) // MXFP4's edge scale bytes: subnormals, Inf, NaN
		}
		if p.Hostile {
			consider(c.Op+"/hostile", c.ID, n)
		}
	}
	seen := map[string]bool{}
	for _, p := range best {
		seen[p.id] = true
	}
	sel := selection{suite: name}
	for _, c := range r.Cases { // recipe order
		if seen[c.ID] {
			sel.cases = append(sel.cases, c.ID)
		}
	}
	return sel
}

// opsOf returns the ops of the selected cases.
func opsOf(t testing.TB, s selection) map[string]bool {
	t.Helper()
	r, err := manifests.LookupSuite(s.suite)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	for _, c := range r.Cases {
		if slices.Contains(s.cases, c.ID) {
			ops[c.Op] = true
		}
	}
	return ops
}

// listOps returns the op names `goldset list --ops --json` of g reports.
func listOps(t testing.TB, g goldset) []string {
	t.Helper()
	r := mustRun(t, g, time.Minute, "list", "--ops", "--json")
	var doc struct {
		Ops []struct {
			Name string `json:"name"`
		} `json:"ops"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Ops) == 0 {
		t.Fatalf("goldset list --ops --json: %v\n%s", err, r.stdout)
	}
	var names []string
	for _, o := range doc.Ops {
		names = append(names, o.Name)
	}
	return names
}
