package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goldset/goldset/internal/testenv"
)

// startGoldset starts the real main (TestMain) in a child process.
func startGoldset(t *testing.T, stdin io.Reader, stdout io.Writer, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"--"}, args...)...)
	cmd.Env = append(os.Environ(), "GOLDSET_TEST_MAIN=1")
	var errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, &errb
}

// termAndWait sends SIGTERM and returns how long the process took to exit;
// one still running after limit is killed and fails the test.
func termAndWait(t *testing.T, cmd *exec.Cmd, limit time.Duration) time.Duration {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return time.Since(start)
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("goldset %v: still running %v after SIGTERM", cmd.Args[2:], limit)
	}
	return 0
}

// SIGTERM ends a command within the grace second plus a margin, exit 130:
// one blocked reading stdin (cancelled through its context), one blocked
// writing to a stdout nobody reads (a write no context reaches: the forced
// exit), and gen in the middle of a build (which leaves nothing behind).
func TestSIGTERMEndsBlockedCommands(t *testing.T) {
	const limit = graceAfterSignal + 1500*time.Millisecond
	tok := filepath.Join(testenv.RepoRoot(t), "longbench", "tokenizer", "testdata", "tiny.json")

	t.Run("stdin", func(t *testing.T) {
		pr, pw, _ := os.Pipe() // never written or closed: the read blocks
		defer pr.Close()
		defer pw.Close()
		cmd, errb := startGoldset(t, pr, io.Discard, "tokenize", "--tokenizer", tok, "--tokenizer-any")
		time.Sleep(300 * time.Millisecond)
		took := termAndWait(t, cmd, limit)
		if code := cmd.ProcessState.ExitCode(); code != exitInterrupted || !strings.Contains(errb.String(), "interrupted") {
			t.Errorf("exit %d after %v: %s", code, took, errb.String())
		}
		t.Logf("stdin-blocked tokenize: exit %d %v after SIGTERM: %s", cmd.ProcessState.ExitCode(), took.Round(time.Millisecond), strings.TrimSpace(errb.String()))
	})

	t.Run("stdout", func(t *testing.T) {
		text := filepath.Join(t.TempDir(), "big.txt")
		os.WriteFile(text, bytes.Repeat([]byte("Hello, world. "), 1<<16), 0o644) // ~900 KB: ids far beyond a pipe's 64 KiB
		pr, pw, _ := os.Pipe()
		defer pr.Close()
		cmd, errb := startGoldset(t, nil, pw, "tokenize", "--tokenizer", tok, "--tokenizer-any", "--ids", text)
		pw.Close()
		// The first byte shows the write has begun; unread, the pipe fills
		// and the write blocks where no context reaches.
		if _, err := pr.Read(make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		took := termAndWait(t, cmd, limit)
		if code := cmd.ProcessState.ExitCode(); code != exitInterrupted || !strings.Contains(errb.String(), "still blocked") {
			t.Errorf("exit %d after %v, want 130 by the forced exit: %s", code, took, errb.String())
		}
		if took < graceAfterSignal {
			t.Errorf("exited %v after SIGTERM: before the grace second, so not by the forced exit", took)
		}
		t.Logf("stdout-blocked tokenize --ids: exit %d %v after SIGTERM: %s", cmd.ProcessState.ExitCode(), took.Round(time.Millisecond), strings.TrimSpace(errb.String()))
	})

	t.Run("gen", func(t *testing.T) {
		out := t.TempDir()
		cmd, errb := startGoldset(t, nil, io.Discard, "gen", "stage1-basic", "--out", out, "--jobs", "1", "-q", "--no-space-check")
		// Wait until the build has begun writing (its temporary directory).
		deadline := time.Now().Add(30 * time.Second)
		for {
			if ents, _ := os.ReadDir(out); len(ents) > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		took := termAndWait(t, cmd, limit)
		if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
			t.Errorf("gen: exit %d after %v: %s", code, took, errb.String())
		}
		if ents, _ := os.ReadDir(out); len(ents) != 0 {
			t.Errorf("gen interrupted by SIGTERM left %v in %s", ents, out)
		}
		t.Logf("gen mid-build: exit %d %v after SIGTERM: %s", cmd.ProcessState.ExitCode(), took.Round(time.Millisecond), strings.TrimSpace(errb.String()))
	})
}
