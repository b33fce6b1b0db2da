package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashSelection is a few stage2-paged cases (every stage-2 op, several
// MiB, a couple of seconds with --jobs 1): long enough to be interrupted
// while tensors are being written.
func crashSelection(t testing.TB) selection {
	return smallSelection(t, "stage2-paged", 24<<20)
}

// crashSelections are the selections the kill and interrupt tests run
// on: stage2-paged's, and for stage5-dsa and stage6-mxfp4 a case of
// every op (DSA's indexer in both layouts, MXFP4's edge scale bytes),
// whose builders write several tensors per case through their own
// streaming paths (the MoE's expert pipeline among them).
func crashSelections(t testing.TB) []selection {
	return []selection{crashSelection(t), smallSelection(t, "stage5-dsa", 4<<20), smallSelection(t, "stage6-mxfp4", 4<<20)}
}

// started is a goldset gen running in the background.
type started struct {
	cmd            *exec.Cmd
	done           chan struct{}
	err            error
	stdout, stderr bytes.Buffer
}

func start(t *testing.T, g goldset, args ...string) *started {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	s := &started{done: make(chan struct{})}
	s.cmd = g.command(ctx, args...)
	s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	return s
}

// exited reports whether the process has ended.
func (s *started) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// wait waits for the process and returns its exit code (-1 when killed by a signal).
func (s *started) wait() int {
	<-s.done
	var ee *exec.ExitError
	if s.err == nil {
		return 0
	}
	if errors.As(s.err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// until polls cond as fast as it can until it holds (true) or the
// process ends or a minute passes (false).
func (s *started) until(cond func() bool) bool {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		if s.exited() {
			return cond()
		}
	}
	return false
}

// globAny reports whether pattern matches anything.
func globAny(pattern string) bool {
	m, _ := filepath.Glob(pattern)
	return len(m) > 0
}

// killPoint says when to signal a running gen writing suite into out.
type killPoint struct {
	name  string
	short bool // also run with -short
	// replace runs gen over an existing bundle of fewer cases (a
	// different digest), so the target may hold the old or the new one.
	replace bool
	// reached waits for the point; false when the run ended first.
	reached func(s *started, out, suite string) bool
}

var killPoints = []killPoint{
	{"early-50ms", false, false, func(s *started, out, suite string) bool {
		time.Sleep(50 * time.Millisecond)
		return !s.exited()
	}},
	{"tensor-writes", true, false, func(s *started, out, suite string) bool {
		return s.until(func() bool { return globAny(filepath.Join(out, "."+suite+".goldset-tmp-*", "*", "*.npy")) })
	}},
	{"commit", false, false, func(s *started, out, suite string) bool {
		// manifest.json is the last file written into the temporary
		// directory, before the fsyncs and the rename.
		return s.until(func() bool { return fileExistsGlob(filepath.Join(out, "."+suite+".goldset-tmp-*", "manifest.json")) })
	}},
	{"just-after-rename", false, false, func(s *started, out, suite string) bool {
		return s.until(func() bool { return fileExists(filepath.Join(out, suite, "manifest.json")) })
	}},
	{"replace-commit", false, true, func(s *started, out, suite string) bool {
		return s.until(func() bool { return fileExistsGlob(filepath.Join(out, "."+suite+".goldset-tmp-*", "manifest.json")) })
	}},
	// Between moving the old bundle aside and renaming the new one into
	// place: a window of two rename calls, rarely caught.
	{"replace-between-renames", false, true, func(s *started, out, suite string) bool {
		return s.until(func() bool { return fileExistsGlob(filepath.Join(out, "."+suite+".goldset-old-*")) })
	}},
}

func fileExistsGlob(pattern string) bool { return globAny(pattern) }

// TestKillDuringGen kills goldset gen with SIGKILL at several points and
// checks the atomic-bundle promise: afterwards there is either no bundle
// at the target or one that verifies with the clean run's digest, and a
// rerun removes the stale temporary directory (saying so) and succeeds.
func TestKillDuringGen(t *testing.T) {
	g := nativeGoldset(t)
	for _, sel := range crashSelections(t) {
		t.Run(sel.suite, func(t *testing.T) { killDuringGen(t, g, sel) })
	}
}

func killDuringGen(t *testing.T, g goldset, sel selection) {
	base := t.TempDir()
	clean := filepath.Join(base, "clean")
	mustRun(t, g, 5*time.Minute, sel.genArgs(clean, "--jobs", "2")...)
	cleanDigest := readManifest(t, filepath.Join(clean, sel.suite)).Digest
	t.Logf("clean run of %s (%s): digest %s", sel.suite, strings.Join(sel.cases, " "), cleanDigest)

	for _, kp := range killPoints {
		t.Run(kp.name, func(t *testing.T) {
			if testing.Short() && !kp.short {
				t.Skip("one kill point runs with -short")
			}
			out := filepath.Join(base, kp.name)
			target := filepath.Join(out, sel.suite)
			digests := []string{cleanDigest}
			if kp.replace {
				old := selection{suite: sel.suite, cases: sel.cases[:1]}
				mustRun(t, g, 5*time.Minute, old.genArgs(out)...)
				digests = append(digests, readManifest(t, target).Digest)
			}
			s := start(t, g, sel.genArgs(out, "--jobs", "1", "--overwrite")...)
			reached := kp.reached(s, out, sel.suite)
			if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
				t.Fatal(err)
			}
			code := s.wait()
			tmps := leftovers(t, out)
			_, statErr := os.Stat(target)
			targetExists := statErr == nil
			t.Logf("kill at %s: point reached %v, exit %d, bundle at target %v, temporary dirs left %d",
				kp.name, reached, code, targetExists, len(tmps))
			if kp.name == "commit" && reached && targetExists {
				t.Logf("the commit window was missed: the rename had already happened")
			}
			noStrays(t, out, sel.suite)
			if targetExists {
				got := checkBundle(t, g, target, digests...)
				if kp.replace {
					t.Logf("the target holds the %s bundle", map[bool]string{true: "new", false: "old"}[got == cleanDigest])
				}
			} else if kp.replace {
				t.Logf("killed between the renames: no bundle at the target, the old one moved aside in %v", tmps)
			}

			r := mustRun(t, g, 5*time.Minute, sel.genArgs(out, "--jobs", "2", "--overwrite")...)
			for _, tmp := range tmps {
				if !strings.Contains(r.stderr, "removed stale temporary directory "+tmp) {
					t.Errorf("rerun after a kill left %s; want stderr to say it removed it:\n%s", tmp, r.stderr)
				}
			}
			if left := leftovers(t, out); len(left) > 0 {
				t.Errorf("after the rerun, temporary directories remain: %v", left)
			}
			noStrays(t, out, sel.suite)
			checkBundle(t, g, target, cleanDigest)
		})
	}
}

// noStrays fails t for every entry of out that is neither the bundle
// target nor a temporary directory goldset recognises (and removes on
// the next run): a file or directory a killed build left under another
// name would outlive every rerun.
func noStrays(t *testing.T, out, suite string) {
	t.Helper()
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	tmps := leftovers(t, out)
	for _, e := range ents {
		p := filepath.Join(out, e.Name())
		if e.Name() != suite && !slices.Contains(tmps, p) {
			t.Errorf("stray entry beside the bundle: %s", p)
		}
	}
}

// checkBundle requires goldset verify to pass on dir and its digest to
// be one of want; it returns the digest.
func checkBundle(t *testing.T, g goldset, dir string, want ...string) string {
	t.Helper()
	r := run(t, g, 5*time.Minute, "verify", dir)
	if r.code != 0 {
		t.Fatalf("bundle at the target fails verify: %v", r)
	}
	got := readManifest(t, dir).Digest
	if !slices.Contains(want, got) {
		t.Errorf("bundle at %s has digest %s, want one of %v", dir, got, want)
	}
	return got
}

// TestInterruptDuringGen sends SIGINT (and SIGTERM) while tensors are
// being written: goldset must exit 1 saying no bundle was written, leave
// no bundle at the target and remove its temporary directory.
func TestInterruptDuringGen(t *testing.T) {
	g := nativeGoldset(t)
	for _, sel := range crashSelections(t) {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(sel.suite+"/"+sig.String(), func(t *testing.T) {
				if testing.Short() && sig != syscall.SIGINT {
					t.Skip("SIGINT only with -short")
				}
				out := t.TempDir()
				s := start(t, g, sel.genArgs(out, "--jobs", "1")...)
				if !killPoints[1].reached(s, out, sel.suite) {
					s.wait()
					t.Fatalf("gen finished before any tensor file was seen; stderr:\n%s", s.stderr.String())
				}
				if err := s.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				code := s.wait()
				if code == 0 && fileExists(filepath.Join(out, sel.suite)) {
					// The signal came after the commit: a whole bundle, which must verify.
					t.Logf("%v arrived after the commit", sig)
					checkBundle(t, g, filepath.Join(out, sel.suite), readManifest(t, filepath.Join(out, sel.suite)).Digest)
					return
				}
				if code != 130 {
					t.Errorf("exit %d after %v, want 130; stderr:\n%s", code, sig, s.stderr.String())
				}
				if !strings.Contains(s.stderr.String(), "interrupted: no bundle written") {
					t.Errorf("stderr after %v does not say no bundle was written:\n%s", sig, s.stderr.String())
				}
				if fileExists(filepath.Join(out, sel.suite)) {
					t.Errorf("a bundle exists at the target after %v", sig)
				}
				if left := leftovers(t, out); len(left) > 0 {
					t.Errorf("temporary directories left after %v: %v", sig, left)
				}
				noStrays(t, out, sel.suite)
				mustRun(t, g, 5*time.Minute, sel.genArgs(out, "--jobs", "2")...)
				noStrays(t, out, sel.suite)
				checkBundle(t, g, filepath.Join(out, sel.suite), readManifest(t, filepath.Join(out, sel.suite)).Digest)
			})
		}
	}
}

// mountTmpfs mounts a tmpfs of size bytes at a new directory, unmounted
// at the end of the test; it skips the test when mounting is not allowed.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (%v: %s)", err, bytes.TrimSpace(b))
	}
	t.Cleanup(func() {
		if b, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, b)
		}
	})
	return dir
}

// TestDiskFull runs gen into a tmpfs too small for the bundle: a clear
// error, exit 1, and nothing left behind (no bundle, no temporary
// directory). Then it sizes the tmpfs so every tensor fits but the
// manifest does not, to fail inside the commit.
func TestDiskFull(t *testing.T) {
	g := nativeGoldset(t)
	sel := crashSelection(t)

	check := func(t *testing.T, mnt string, r result) {
		t.Helper()
		wantCode(t, r, 1)
		if !strings.Contains(r.stderr, "no space left on device") {
			t.Errorf("stderr does not name the cause:\n%s", r.stderr)
		}
		ents, err := os.ReadDir(mnt)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			t.Errorf("left behind on the full file system: %s", e.Name())
		}
	}

	t.Run("tensors", func(t *testing.T) {
		mnt := mountTmpfs(t, 8<<20)
		// Refused up front by the free-space check; with it off, the
		// writes hit ENOSPC and must still leave nothing.
		r := run(t, g, 5*time.Minute, sel.genArgs(mnt, "--jobs", "2")...)
		wantCode(t, r, 1)
		if !strings.Contains(r.stderr, "not enough free space") {
			t.Errorf("stderr does not refuse for lack of space:\n%s", r.stderr)
		}
		r = run(t, g, 5*time.Minute, sel.genArgs(mnt, "--jobs", "2", "--no-space-check")...)
		check(t, mnt, r)
		t.Logf("8 MiB tmpfs: exit %d: %s", r.code, strings.TrimSpace(r.stderr))
	})

	t.Run("manifest", func(t *testing.T) {
		if testing.Short() {
			t.Skip("one disk-full case with -short")
		}
		// One small case, on a tmpfs one page short of its bundle: the
		// tensors fit and the manifest, written last, does not.
		one := selection{suite: sel.suite, cases: sel.cases[:1]}
		ref := filepath.Join(t.TempDir(), "ref")
		mustRun(t, g, 5*time.Minute, one.genArgs(ref)...)
		const page = 4096
		var pages int64
		for _, h := range treeSizes(t, filepath.Join(ref, one.suite)) {
			pages += (h + page - 1) / page
		}
		mnt := mountTmpfs(t, (pages-1)*page)
		r := run(t, g, 5*time.Minute, one.genArgs(mnt, "--no-space-check")...)
		if r.code == 0 {
			t.Skipf("the bundle fit in %d pages (tmpfs accounts differently here); the manifest-write failure was not exercised", pages-1)
		}
		check(t, mnt, r)
		if !strings.Contains(r.stderr, "manifest.json") {
			t.Logf("the manifest write did not fail, an earlier write did: %s", strings.TrimSpace(r.stderr))
		}
		t.Logf("tmpfs one page short of the bundle: exit %d: %s", r.code, strings.TrimSpace(r.stderr))
	})
}

// treeSizes returns the size of every regular file under dir.
func treeSizes(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			out[p] = fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
