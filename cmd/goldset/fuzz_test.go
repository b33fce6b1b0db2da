package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzCLIArgs feeds arbitrary argument lists to the commands that only read
// (and to gen with --dry-run), in a scratch working directory, with "B"
// standing for a small bundle. Whatever the arguments, goldset must not
// panic and must exit with a code from the table (0, 1, 2, 3).
func FuzzCLIArgs(f *testing.F) {
	for _, s := range []string{
		"verify B", "verify B --jobs 0", "verify --json", "compare B --case sm-781-bf16 --output y=B",
		"compare B --case sm-781-bf16 --output y= --output y=x", "inspect B --case nope", "diff B B --jobs -1",
		"list stage1-basic --cases", "gen stage1-basic --split hidden", "gen --case x", "gen --shard 0/0",
		"longbench biuld", "nope", "compare B --case", "--version", "completion bash",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	bundle := small(f, dir)
	safe := map[string]bool{"verify": true, "compare": true, "inspect": true, "diff": true, "list": true,
		"gen": true, "longbench": true, "version": true, "help": true, "completion": true, "--version": true, "--help": true, "nope": true}
	f.Fuzz(func(t *testing.T, line string) {
		t.Chdir(t.TempDir())
		args := strings.Fields(line)
		if len(args) == 0 || !safe[args[0]] || len(args) > 16 {
			return
		}
		for i, a := range args {
			if a == "B" {
				args[i] = bundle
			} else if strings.ContainsAny(a, `/\`) || strings.HasPrefix(a, "~") || filepath.IsAbs(a) {
				return // stay in the scratch directory
			}
		}
		if args[0] == "gen" {
			args = append(args, "--dry-run", "--out", "out", "--cpuprofile=", "--trace=")
		}
		var out, errb bytes.Buffer
		code := Main(context.Background(), args, strings.NewReader(""), &out, &errb)
		switch code {
		case exitOK, exitError, exitUsage, exitMismatch:
		default:
			t.Fatalf("goldset %q: exit %d", args, code)
		}
		if code == exitUsage && errb.Len() == 0 {
			t.Fatalf("goldset %q: usage error without a message", args)
		}
	})
}
