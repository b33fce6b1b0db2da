package serving

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/goldset/goldset/internal/safefile"
)

// ManifestFile is the workload manifest's name inside a workload directory.
const ManifestFile = "manifest.json"

// maxManifestBytes bounds what ReadWorkload reads (a 100k-prompt manifest is
// about 40 MB).
const maxManifestBytes = 512 << 20

// Prompt is one request of the workload, in the manifest's order.
type Prompt struct {
	CustomID     string `json:"custom_id"`
	PromptTokens int    `json:"prompt_tokens"`
	MaxNewTokens int    `json:"max_new_tokens"`
	PromptSHA256 string `json:"prompt_sha256"`
	Chat         bool   `json:"chat_template"`
	// Subset, ID and Line locate the LongBench record the prompt was built
	// from (<data>/<subset>.jsonl, line Line, "_id" ID); score reads its answers.
	Subset string `json:"subset"`
	ID     string `json:"_id"`
	Line   int    `json:"line"`
}

// File is one consumer file of the workload with the command that runs it
// (the manifest's "files" list; absent from manifests built before issue 12).
type File struct {
	Path                string `json:"path"`
	Consumer            string `json:"consumer"`
	Command             string `json:"command"`
	AppliesChatTemplate bool   `json:"applies_chat_template"`
}

// Workload is what serving needs from `goldset longbench build`'s manifest.json.
type Workload struct {
	Dir        string
	Format     string
	Prompts    []Prompt
	ContextLen int
	Files      []File
	// Outputs maps each output file's path to its sha256 (manifest "outputs").
	Outputs map[string]string
	// Digest identifies the request list (see WorkloadDigest). DigestComputed
	// says the manifest carried none and Digest was computed here;
	// DigestRecorded is the manifest's own value when it had one.
	Digest         string
	DigestComputed bool
	DigestRecorded string
	// Version is longbench_version ("v1" or "v2"); DataDir and Sources are
	// where the build read its records (sources: path relative to DataDir,
	// sha256).
	Version string
	DataDir string
	Sources []Source
}

// Source is one LongBench file the workload was built from.
type Source struct {
	Subset string `json:"subset"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

type manifestJSON struct {
	Format         string   `json:"format"`
	Version        string   `json:"longbench_version"`
	DataDir        string   `json:"data_dir"`
	Sources        []Source `json:"sources"`
	Prompts        []Prompt `json:"prompts"`
	WorkloadDigest string   `json:"workload_digest"`
	Files          []File   `json:"files"`
	Outputs        []struct {
		Path   string `json:"path"`
		SHA256 string `json:"sha256"`
	} `json:"outputs"`
	Recipe struct {
		ContextLen int `json:"context_len"`
	} `json:"recipe"`
}

// ReadWorkload reads DIR/manifest.json (or the manifest path itself).
func ReadWorkload(path string) (*Workload, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, ManifestFile)
	}
	b, err := safefile.ReadFile(path, maxManifestBytes) // a regular file, size checked before reading
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrWorkload, err)
	}
	w, err := ParseWorkload(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	w.Dir = filepath.Dir(path)
	return w, nil
}

// ParseWorkload parses manifest.json bytes.
func ParseWorkload(b []byte) (*Workload, error) {
	var m manifestJSON
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWorkload, err)
	}
	if len(m.Prompts) == 0 {
		return nil, fmt.Errorf("%w: no prompts (not a goldset longbench manifest?)", ErrWorkload)
	}
	for i, p := range m.Prompts {
		if p.PromptTokens <= 0 || p.MaxNewTokens <= 0 {
			return nil, fmt.Errorf("%w: prompts[%d] (%q): prompt_tokens %d, max_new_tokens %d must be positive",
				ErrWorkload, i, p.CustomID, p.PromptTokens, p.MaxNewTokens)
		}
	}
	w := &Workload{Format: m.Format, Prompts: m.Prompts, ContextLen: m.Recipe.ContextLen, Files: m.Files, Outputs: map[string]string{},
		Version: m.Version, DataDir: m.DataDir, Sources: m.Sources}
	for _, o := range m.Outputs {
		w.Outputs[o.Path] = o.SHA256
	}
	w.Digest = WorkloadDigest(m.Prompts)
	if m.WorkloadDigest != "" {
		w.DigestRecorded = m.WorkloadDigest
		w.Digest = m.WorkloadDigest
	} else {
		w.DigestComputed = true
	}
	return w, nil
}

// WorkloadDigest is longbench's workload_digest (issue 12): the hex sha256
// of, for each prompt in order, the UTF-8 bytes
// "<len(custom_id)>:<custom_id> <prompt_sha256> <prompt_tokens> <max_new_tokens>\n"
// (decimal numbers, single spaces). Two workloads with the same digest send
// the same requests with the same lengths in the same order.
func WorkloadDigest(prompts []Prompt) string {
	h := sha256.New()
	var buf []byte
	for _, p := range prompts {
		buf = strconv.AppendInt(buf[:0], int64(len(p.CustomID)), 10)
		buf = append(buf, ':')
		buf = append(buf, p.CustomID...)
		buf = append(buf, ' ')
		buf = append(buf, p.PromptSHA256...)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, int64(p.PromptTokens), 10)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, int64(p.MaxNewTokens), 10)
		buf = append(buf, '\n')
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// N is the number of requests the workload sends.
func (w *Workload) N() int { return len(w.Prompts) }

// TotalPromptTokens and TotalMaxNewTokens sum the workload's lengths.
func (w *Workload) TotalPromptTokens() int64 {
	var s int64
	for _, p := range w.Prompts {
		s += int64(p.PromptTokens)
	}
	return s
}

func (w *Workload) TotalMaxNewTokens() int64 {
	var s int64
	for _, p := range w.Prompts {
		s += int64(p.MaxNewTokens)
	}
	return s
}
