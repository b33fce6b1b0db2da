package schedule

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/goldset/goldset/internal/safefile"
	"io"
	"os"
	"path/filepath"
)

// ManifestFile is the workload manifest's name in a `goldset longbench
// build` output directory.
const ManifestFile = "manifest.json"

// maxWorkloadBytes bounds what ReadWorkload reads; MaxRequests bounds the
// requests of one workload.
const (
	maxWorkloadBytes = 512 << 20
	MaxRequests      = 1 << 22
)

// ReadWorkload reads requests from path: a `goldset longbench build`
// directory (its manifest.json), a manifest.json, or a requests JSONL file
// (see ParseWorkload). Errors name the file.
func ReadWorkload(path string) ([]Request, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, ManifestFile)
	}
	// A regular file only (a FIFO would block, a link is not followed),
	// its size checked before reading.
	b, err := safefile.ReadFile(path, maxWorkloadBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrWorkload, err)
	}
	reqs, err := ParseWorkload(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return reqs, nil
}

type manifestPrompt struct {
	CustomID     string `json:"custom_id"`
	PromptTokens int    `json:"prompt_tokens"`
	MaxNewTokens int    `json:"max_new_tokens"`
}

// ParseWorkload parses either a longbench manifest.json (a JSON object with
// "prompts": [{"custom_id", "prompt_tokens", "max_new_tokens"}, ...]; every
// request arrives at step 0, as vLLM's benchmarks send them at an infinite
// request rate) or JSONL, one Request per line ({"id", "prompt_tokens",
// "output_tokens", "arrival_step"}; blank lines skipped). Lengths must be
// positive and arrival steps non-negative; errors name the line or prompt.
func ParseWorkload(b []byte) ([]Request, error) {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	var m struct {
		Prompts *[]manifestPrompt `json:"prompts"`
	}
	if err := json.Unmarshal(b, &m); err == nil && m.Prompts != nil {
		ps := *m.Prompts
		if len(ps) == 0 {
			return nil, fmt.Errorf("%w: manifest has no prompts", ErrWorkload)
		}
		if len(ps) > MaxRequests {
			return nil, fmt.Errorf("%w: %d prompts, more than %d", ErrWorkload, len(ps), MaxRequests)
		}
		reqs := make([]Request, len(ps))
		for i, p := range ps {
			reqs[i] = Request{ID: p.CustomID, PromptTokens: p.PromptTokens, OutputTokens: p.MaxNewTokens}
			if err := checkParsed(reqs[i]); err != nil {
				return nil, fmt.Errorf("%w: prompts[%d] (%q): %v", ErrWorkload, i, p.CustomID, err)
			}
		}
		return reqs, nil
	}
	var reqs []Request
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	for line := 1; sc.Scan(); line++ {
		t := bytes.TrimSpace(sc.Bytes())
		if len(t) == 0 {
			continue
		}
		var r struct {
			ID           string `json:"id"`
			PromptTokens *int   `json:"prompt_tokens"`
			OutputTokens *int   `json:"output_tokens"`
			ArrivalStep  int    `json:"arrival_step"`
		}
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrWorkload, line, err)
		}
		if _, err := dec.Token(); err != io.EOF {
			// More() alone misses a stray '}' or ']' after the value.
			return nil, fmt.Errorf("%w: line %d: more than one JSON value", ErrWorkload, line)
		}
		if r.PromptTokens == nil || r.OutputTokens == nil {
			return nil, fmt.Errorf("%w: line %d: prompt_tokens and output_tokens are required", ErrWorkload, line)
		}
		q := Request{ID: r.ID, PromptTokens: *r.PromptTokens, OutputTokens: *r.OutputTokens, ArrivalStep: r.ArrivalStep}
		if err := checkParsed(q); err != nil {
			return nil, fmt.Errorf("%w: line %d (%q): %v", ErrWorkload, line, r.ID, err)
		}
		if len(reqs) == MaxRequests {
			return nil, fmt.Errorf("%w: more than %d requests", ErrWorkload, MaxRequests)
		}
		reqs = append(reqs, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWorkload, err)
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%w: no requests", ErrWorkload)
	}
	return reqs, nil
}

func checkParsed(r Request) error {
	const lim = 1 << 30
	switch {
	case r.PromptTokens < 1 || r.PromptTokens > lim:
		return fmt.Errorf("prompt_tokens %d out of range [1, %d]", r.PromptTokens, lim)
	case r.OutputTokens < 1 || r.OutputTokens > lim:
		return fmt.Errorf("output_tokens %d out of range [1, %d]", r.OutputTokens, lim)
	case r.ArrivalStep < 0 || r.ArrivalStep > lim:
		return fmt.Errorf("arrival_step %d out of range [0, %d]", r.ArrivalStep, lim)
	}
	return nil
}
