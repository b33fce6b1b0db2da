package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/suite"
)

// smallRecipe covers the five ops at tiny sizes (shapes from the suite
// package's tiny recipe).
const smallRecipe = `{
 "name": "e2e-small", "version": "0.1.0", "spec_version": 1, "seed": 11,
 "cases": [
  {"id": "mm", "op": "matmul", "split": "public", "params": {"m": 3, "k": 37, "n": 5, "dtype": "float16"}},
  {"id": "sm", "op": "softmax", "split": "public", "params": {"m": 9, "n": 300, "dtype": "float16", "outlier_rows": 3, "neg_inf_rows": 2, "neg_inf_prefix": 64, "masked_rows": 1}},
  {"id": "rc", "op": "reshape_and_cache", "split": "public", "params": {"t": 40, "t_s": 35, "hkv": 2, "d": 16, "bs": 4, "nb": 30, "dtype": "float16", "skip_frac": 0.2, "slot0": true}},
  {"id": "pa", "op": "paged_attention", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 16, "bs": 4, "dtype": "bfloat16", "context_lens": [4, 5, 1, 13], "shared_blocks": 1}},
  {"id": "quest", "op": "quest", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 16, "bs": 4, "dtype": "bfloat16", "context_lens": [3, 8, 30, 41], "k": 4}}
 ]
}`

var errInjected = errors.New("injected write failure")

// failingSink accepts limit bytes in all, then fails every write; with
// failClose set, Close fails instead. It counts files left open.
type failingSink struct {
	limit     int64
	failClose bool
	failOpen  int // fail the n-th Create (1-based); 0: never

	mu      sync.Mutex
	written int64
	opened  int
	open    map[*failingFile]string
}

type failingFile struct {
	s *failingSink
	n int64
}

func (s *failingSink) Create(rel string, compress bool) (suite.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opened++
	if s.opened == s.failOpen {
		return nil, fmt.Errorf("create %s: %w", rel, errInjected)
	}
	f := &failingFile{s: s}
	if s.open == nil {
		s.open = map[*failingFile]string{}
	}
	s.open[f] = rel
	return f, nil
}

func (f *failingFile) Write(p []byte) (int, error) {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failClose {
		f.n += int64(len(p))
		return len(p), nil
	}
	room := max(s.limit-s.written, 0)
	n := int64(len(p))
	if n > room {
		n = room
	}
	s.written += n
	f.n += n
	if n < int64(len(p)) {
		return int(n), fmt.Errorf("write: %w", errInjected)
	}
	return len(p), nil
}

func (f *failingFile) Close() error {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.open[f]; !ok {
		return errors.New("closed twice")
	}
	delete(s.open, f)
	if s.failClose {
		return fmt.Errorf("close: %w", errInjected)
	}
	return nil
}

func (f *failingFile) SHA256() string { return strings.Repeat("0", 64) }
func (f *failingFile) Bytes() int64   { return f.n }

// TestBuildFailingSink drives suite.Build into a sink that runs out of
// space after N bytes (at header, mid-tensor and last-byte boundaries),
// one whose Close fails and one whose Create fails: Build must return an
// error wrapping the cause, never panic, and close every file it opened.
func TestBuildFailingSink(t *testing.T) {
	r, err := manifests.ParseRecipe("e2e-small", []byte(smallRecipe))
	if err != nil {
		t.Fatal(err)
	}
	m, err := suite.Build(context.Background(), r, suite.HashSink{}, suite.Options{Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	files := 0
	for _, c := range m.Cases {
		for _, tn := range c.Tensors {
			total += tn.Bytes
			files++
		}
	}
	type tc struct {
		name string
		sink func() *failingSink
	}
	var cases []tc
	for _, n := range []int64{0, 1, 64, 127, 128, 129, 4096, total / 3, total / 2, total - 1} {
		cases = append(cases, tc{fmt.Sprintf("full-after-%d-bytes", n), func() *failingSink { return &failingSink{limit: n} }})
	}
	cases = append(cases,
		tc{"close-fails", func() *failingSink { return &failingSink{failClose: true} }},
		tc{"first-create-fails", func() *failingSink { return &failingSink{limit: total, failOpen: 1} }},
		tc{"last-create-fails", func() *failingSink { return &failingSink{limit: total, failOpen: files} }},
	)
	for _, c := range cases {
		for _, jobs := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/jobs-%d", c.name, jobs), func(t *testing.T) {
				s := c.sink()
				_, err := suite.Build(context.Background(), r, s, suite.Options{Jobs: jobs})
				if !errors.Is(err, errInjected) {
					t.Fatalf("Build into a failing sink: err = %v, want the injected failure", err)
				}
				if !strings.Contains(err.Error(), "case ") {
					t.Errorf("error does not name the case: %v", err)
				}
				if len(s.open) > 0 {
					var left []string
					for _, rel := range s.open {
						left = append(left, rel)
					}
					t.Errorf("Build returned %q with %d file(s) still open: %v", err, len(left), left)
				}
			})
		}
	}
	// The full byte budget is enough: the sink itself is not at fault.
	s := &failingSink{limit: total}
	if _, err := suite.Build(context.Background(), r, s, suite.Options{Jobs: 2}); err != nil {
		t.Fatalf("Build with exactly enough room: %v", err)
	}
}
