package longbench

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/goldset/goldset/internal/newfile"
	"github.com/goldset/goldset/internal/shutdown"
	"github.com/goldset/goldset/npy"
)

// Output file names inside BuildOptions.Out (the consumer files are in
// consumers.go).
const (
	IDsFile      = "prompt_ids.npy"
	OffsetsFile  = "prompt_offsets.npy"
	LensFile     = "prompt_lens.npy"
	ManifestFile = "manifest.json"
)

// ManifestFormat identifies the manifest layout (2: consumer files,
// workload_digest, budget by construction, length sets).
const ManifestFormat = "goldset.longbench/2"

// Manifest is manifest.json: everything needed to reproduce or audit a build.
type Manifest struct {
	Format     string         `json:"format"`
	LongBench  string         `json:"longbench_version"`
	DataDir    string         `json:"data_dir"`
	Sources    []FileInfo     `json:"sources"` // Path relative to DataDir
	Templates  []FileDigest   `json:"templates"`
	Tokenizer  TokenizerInfo  `json:"tokenizer"`
	Recipe     RecipeInfo     `json:"recipe"`
	Selection  SelectionInfo  `json:"selection"`
	LengthSets *LengthSetInfo `json:"length_sets,omitempty"`
	Model      string         `json:"model"`
	// WorkloadDigest identifies the ordered requests (see WorkloadDigest).
	WorkloadDigest string         `json:"workload_digest"`
	Files          []ConsumerFile `json:"files"`
	ChatBatch      ChatBatchInfo  `json:"chat_batch"`
	HistogramPNG   string         `json:"histogram_png"`
	Outputs        []FileDigest   `json:"outputs"` // every file except manifest.json
	Prompts        []PromptInfo   `json:"prompts"`
	Subsets        map[string]int `json:"selected_per_subset"`
	Skipped        []string       `json:"skipped_lines,omitempty"`
	Description    string         `json:"description"`
}

// ChatBatchInfo says which prompts batch.chat.jsonl holds.
type ChatBatchInfo struct {
	File           string `json:"file"` // "" when no prompt takes a chat template
	Requests       int    `json:"requests"`
	EnableThinking bool   `json:"enable_thinking"` // chat_template_kwargs.enable_thinking of every line
	// Excluded are the prompts built without a chat template (LongBench's
	// no-chat subsets, or --no-chat): a chat endpoint would template them.
	ExcludedSubsets   []string `json:"excluded_subsets"`
	ExcludedCustomIDs []string `json:"excluded_custom_ids"`
}

// LengthSetInfo records a length-set build: N prompts per band, each a real
// record middle-truncated so that prompt + output is the band's upper edge.
type LengthSetInfo struct {
	PerBand int        `json:"per_band"`
	Bands   []BandInfo `json:"bands"`
}

// BandInfo is one band: prompts with lower < prompt_tokens + max_new_tokens <= upper.
type BandInfo struct {
	Lower    int  `json:"lower"`
	Upper    int  `json:"upper"` // the target of prompt + output
	Limit    bool `json:"limit"` // upper == context_len
	Eligible int  `json:"eligible"`
	Selected int  `json:"selected"`
	Exact    int  `json:"exact"` // prompts with prompt + output == upper
}

// TokenizerInfo identifies the tokenizer.
type TokenizerInfo struct {
	SHA256 string `json:"sha256"` // of tokenizer.json; "unknown" if the tokenizer cannot say
	// Verified is true when the file is the known Qwen3 tokenizer.json
	// (tokenizer.Qwen3SHA256); otherwise Note says the counts are unverified.
	Verified bool   `json:"verified"`
	Note     string `json:"note,omitempty"`
}

// RecipeInfo records the prompt recipe.
type RecipeInfo struct {
	Template       string       `json:"template"`
	ContextLen     int          `json:"context_len"`
	Budget         string       `json:"budget"`
	Policy         string       `json:"truncation_policy"`
	PolicyNote     string       `json:"truncation_policy_note"`
	FixedMaxLen    int          `json:"fixed_max_len"` // 0: per subset, from the policy
	ChatTokens     int          `json:"chat_template_tokens"`
	V2Template     *FileDigest  `json:"v2_template,omitempty"`
	Truncation     string       `json:"truncation"`
	ChatTemplate   string       `json:"chat_template"`
	ChatHead       string       `json:"chat_head"`
	ChatTail       string       `json:"chat_tail"`
	NoThinking     bool         `json:"no_thinking"`
	NoChat         bool         `json:"no_chat"`
	NoChatSubsets  []string     `json:"no_chat_subsets"`
	Subsets        []SubsetPlan `json:"subsets"`
	OutputLenNotes string       `json:"output_len"`
}

// SelectionInfo records how the prompts were chosen.
type SelectionInfo struct {
	Algorithm       string   `json:"algorithm"`
	PRNG            string   `json:"prng"`
	Seed            uint64   `json:"seed"`
	N               int      `json:"n"`
	TargetMean      float64  `json:"target_mean"`
	Tolerance       float64  `json:"tolerance"`
	MaxPromptTokens int      `json:"max_prompt_tokens"`
	Candidates      int      `json:"candidates"`
	Excluded        int      `json:"excluded_over_max"`
	Swaps           int      `json:"swaps"`
	Fallback        bool     `json:"fallback_window_start"`
	CandidateStats  Stats    `json:"candidate_stats"`
	SelectedStats   Stats    `json:"selected_stats"`
	Histogram       []string `json:"histogram"`
}

// PromptInfo is one selected prompt in output order.
type PromptInfo struct {
	Index        int    `json:"index"`
	CustomID     string `json:"custom_id"`
	Subset       string `json:"subset"`
	ID           string `json:"_id"`
	Line         int    `json:"line"`
	PromptTokens int    `json:"prompt_tokens"`
	RawTokens    int    `json:"raw_tokens"`
	Truncated    bool   `json:"truncated"`
	Chat         bool   `json:"chat_template"`
	MaxNewTokens int    `json:"max_new_tokens"`
	TotalTokens  int    `json:"total_tokens"` // prompt_tokens + max_new_tokens <= recipe.context_len
	Band         int    `json:"band,omitempty"`
	InChatBatch  bool   `json:"in_chat_batch"`
	PromptSHA256 string `json:"prompt_sha256"`
}

// customIDs gives each prompt "<subset>-<_id>", adding "-L<line>" when two
// records share both.
func customIDs(prompts []Prompt) []string {
	ids := make([]string, len(prompts))
	seen := map[string]bool{}
	for i, p := range prompts {
		id := p.Subset + "-" + p.ID
		if p.Target > 0 {
			id += "-t" + strconv.Itoa(p.Target)
		}
		if seen[id] {
			id = fmt.Sprintf("%s-L%d", id, p.Line)
		}
		seen[id] = true
		ids[i] = id
	}
	return ids
}

// writeOutputs writes every output file into dir (which must exist and be
// empty) and completes m.Outputs, m.Prompts, m.Files, m.ChatBatch and the
// workload digest.
func writeOutputs(dir string, prompts []Prompt, m *Manifest, tok Tokenizer, noThinking bool, marks HistogramMarks) error {
	cids := customIDs(prompts)
	m.Subsets = map[string]int{}
	for _, s := range m.Recipe.Subsets {
		m.Subsets[s.Subset] = 0
	}
	for _, p := range prompts {
		m.Subsets[p.Subset]++
	}
	m.Prompts = make([]PromptInfo, len(prompts))
	m.ChatBatch = ChatBatchInfo{EnableThinking: !noThinking, ExcludedSubsets: []string{}, ExcludedCustomIDs: []string{}}
	excl := map[string]bool{}
	for i, p := range prompts {
		m.Prompts[i] = PromptInfo{Index: i, CustomID: cids[i], Subset: p.Subset, ID: p.ID, Line: p.Line,
			PromptTokens: len(p.IDs), RawTokens: p.RawTokens, Truncated: p.Truncated, Chat: p.Chat,
			MaxNewTokens: p.MaxNewTokens, TotalTokens: p.Total(), Band: p.Target, InChatBatch: p.Chat, PromptSHA256: p.SHA256()}
		if p.Chat {
			m.ChatBatch.Requests++
		} else {
			m.ChatBatch.ExcludedCustomIDs = append(m.ChatBatch.ExcludedCustomIDs, cids[i])
			if !excl[p.Subset] {
				excl[p.Subset] = true
				m.ChatBatch.ExcludedSubsets = append(m.ChatBatch.ExcludedSubsets, p.Subset)
			}
		}
	}
	m.WorkloadDigest = WorkloadDigest(m.Prompts)
	replies := NewReplies(tok)
	cp := commandParams{Model: m.Model, ContextLen: m.Recipe.ContextLen, N: len(prompts), NChat: m.ChatBatch.Requests, Digest: m.WorkloadDigest}
	m.Files = cp.files(noThinking, m.ChatBatch.Requests > 0)
	m.Description = describe(m.Files)
	type out struct {
		name string
		fn   func(io.Writer) error
	}
	writers := []out{{ServeFile, func(w io.Writer) error { return writeServe(w, prompts, cids) }}}
	if m.ChatBatch.Requests > 0 {
		m.ChatBatch.File = ChatBatchFile
		writers = append(writers, out{ChatBatchFile, func(w io.Writer) error { return writeChatBatch(w, prompts, cids, m.Model, !noThinking) }})
	}
	writers = append(writers,
		out{SGLangFile, func(w io.Writer) error { return writeSGLang(w, prompts, cids, replies) }},
		out{ShareGPTFile, func(w io.Writer) error { return writeShareGPT(w, prompts, cids, replies) }},
		out{PromptIDsFile, func(w io.Writer) error { return writePromptIDs(w, prompts, cids) }},
		out{OfflineScript, func(w io.Writer) error { _, err := io.WriteString(w, offlineScript); return err }},
		out{IDsFile, func(w io.Writer) error { return writeIDs(w, prompts) }},
		out{OffsetsFile, func(w io.Writer) error { return writeOffsets(w, prompts) }},
		out{LensFile, func(w io.Writer) error { return writeLens(w, prompts) }},
		out{HistogramFile, func(w io.Writer) error {
			lens := make([]int, len(prompts))
			for i := range prompts {
				lens[i] = len(prompts[i].IDs)
			}
			return WriteHistogramPNG(w, histogramTitle(len(lens), ComputeStats(lens)), lens, marks)
		}},
	)
	m.HistogramPNG = HistogramFile
	m.Outputs = nil
	for _, o := range writers {
		d, err := writeFile(filepath.Join(dir, o.name), o.fn)
		if err != nil {
			return err
		}
		d.Path = o.name
		m.Outputs = append(m.Outputs, d)
	}
	_, err := writeFile(filepath.Join(dir, ManifestFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	})
	return err
}

// writeFile creates path, streams fn's output through a buffer and a hash,
// and syncs it.
func writeFile(path string, fn func(io.Writer) error) (FileDigest, error) {
	d, err := newfile.Write(path, 1<<20, fn)
	if err != nil {
		return FileDigest{}, fmt.Errorf("longbench: write %s: %w", path, err)
	}
	return FileDigest{SHA256: d.SHA256, Bytes: d.Bytes}, nil
}

// jsonLine encodes v without HTML escaping (so "<|im_start|>" stays
// readable) followed by '\n'.
func jsonLine(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// serveLine is vLLM's custom dataset line (CustomDataset.load_data reads
// "prompt" and, with --custom-output-len -1, "output_tokens"; other keys are
// kept by pandas and ignored).
type serveLine struct {
	Prompt       string `json:"prompt"`
	OutputTokens int    `json:"output_tokens"`
	CustomID     string `json:"custom_id"`
}

func writeServe(w io.Writer, prompts []Prompt, cids []string) error {
	for i := range prompts {
		if err := jsonLine(w, serveLine{Prompt: prompts[i].Text, OutputTokens: prompts[i].MaxNewTokens, CustomID: cids[i]}); err != nil {
			return err
		}
	}
	return nil
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatBody is the ChatCompletionRequest run-batch validates for
// /v1/chat/completions.
type chatBody struct {
	Model               string         `json:"model"`
	Messages            []chatMessage  `json:"messages"`
	MaxCompletionTokens int            `json:"max_completion_tokens"`
	Temperature         float64        `json:"temperature"`
	IgnoreEOS           bool           `json:"ignore_eos"`
	ChatTemplateKwargs  map[string]any `json:"chat_template_kwargs"`
}

type chatBatchLine struct {
	CustomID string   `json:"custom_id"`
	Method   string   `json:"method"`
	URL      string   `json:"url"`
	Body     chatBody `json:"body"`
}

// writeChatBatch writes the prompts built with a chat template, their
// pre-template text as the user message.
func writeChatBatch(w io.Writer, prompts []Prompt, cids []string, model string, enableThinking bool) error {
	for i := range prompts {
		p := &prompts[i]
		if !p.Chat {
			continue
		}
		l := chatBatchLine{CustomID: cids[i], Method: "POST", URL: "/v1/chat/completions",
			Body: chatBody{Model: model, Messages: []chatMessage{{Role: "user", Content: p.User}},
				MaxCompletionTokens: p.MaxNewTokens, Temperature: 0, IgnoreEOS: true,
				ChatTemplateKwargs: map[string]any{"enable_thinking": enableThinking}}}
		if err := jsonLine(w, l); err != nil {
			return err
		}
	}
	return nil
}

type sglangLine struct {
	CustomID      string        `json:"custom_id"`
	Conversations []chatMessage `json:"conversations"`
}

func writeSGLang(w io.Writer, prompts []Prompt, cids []string, replies *Replies) error {
	for i := range prompts {
		a, err := replies.Text(prompts[i].MaxNewTokens)
		if err != nil {
			return err
		}
		l := sglangLine{CustomID: cids[i], Conversations: []chatMessage{{Role: "user", Content: prompts[i].Text}, {Role: "assistant", Content: a}}}
		if err := jsonLine(w, l); err != nil {
			return err
		}
	}
	return nil
}

type shareGPTTurn struct {
	From  string `json:"from"`
	Value string `json:"value"`
}

type shareGPTEntry struct {
	ID            string         `json:"id"`
	Conversations []shareGPTTurn `json:"conversations"`
}

// writeShareGPT writes a JSON list, one entry per line for readability.
func writeShareGPT(w io.Writer, prompts []Prompt, cids []string, replies *Replies) error {
	if _, err := io.WriteString(w, "[\n"); err != nil {
		return err
	}
	for i := range prompts {
		a, err := replies.Text(prompts[i].MaxNewTokens)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(shareGPTEntry{ID: cids[i], Conversations: []shareGPTTurn{{"human", prompts[i].Text}, {"gpt", a}}}); err != nil {
			return err
		}
		line := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
		if i < len(prompts)-1 {
			line = append(line, ',')
		}
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "]\n")
	return err
}

type promptIDsLine struct {
	CustomID      string `json:"custom_id"`
	PromptTokenID []int  `json:"prompt_token_ids"`
	MaxTokens     int    `json:"max_tokens"`
}

func writePromptIDs(w io.Writer, prompts []Prompt, cids []string) error {
	for i := range prompts {
		if err := jsonLine(w, promptIDsLine{CustomID: cids[i], PromptTokenID: prompts[i].IDs, MaxTokens: prompts[i].MaxNewTokens}); err != nil {
			return err
		}
	}
	return nil
}

func writeIDs(w io.Writer, prompts []Prompt) error {
	var total int64
	for i := range prompts {
		total += int64(len(prompts[i].IDs))
	}
	nw, err := npy.NewWriter(w, npy.Header{Descr: npy.Int32, Shape: []int64{total}})
	if err != nil {
		return err
	}
	buf := make([]byte, 0, 4<<10)
	for i := range prompts {
		for _, id := range prompts[i].IDs {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(int32(id)))
			if len(buf) == cap(buf) {
				if _, err := nw.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
	}
	if _, err := nw.Write(buf); err != nil {
		return err
	}
	return nw.Close()
}

func writeOffsets(w io.Writer, prompts []Prompt) error {
	nw, err := npy.NewWriter(w, npy.Header{Descr: npy.Int64, Shape: []int64{int64(len(prompts) + 1)}})
	if err != nil {
		return err
	}
	buf := make([]byte, 0, 8*(len(prompts)+1))
	var off int64
	buf = binary.LittleEndian.AppendUint64(buf, 0)
	for i := range prompts {
		off += int64(len(prompts[i].IDs))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(off))
	}
	if _, err := nw.Write(buf); err != nil {
		return err
	}
	return nw.Close()
}

func writeLens(w io.Writer, prompts []Prompt) error {
	nw, err := npy.NewWriter(w, npy.Header{Descr: npy.Int32, Shape: []int64{int64(len(prompts))}})
	if err != nil {
		return err
	}
	buf := make([]byte, 0, 4*len(prompts))
	for i := range prompts {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(int32(len(prompts[i].IDs))))
	}
	if _, err := nw.Write(buf); err != nil {
		return err
	}
	return nw.Close()
}

// commitDir writes into a fresh temporary directory beside out and renames
// it to out only when fill succeeds, so a failed build leaves no partial
// output (and an existing out untouched). An existing out is replaced only
// when checkOut proves it is a longbench build (checked again after fill).
func commitDir(out string, overwrite bool, fill func(tmp string) error) error {
	if _, err := checkOut(out, overwrite); err != nil {
		return err
	}
	parent := filepath.Dir(filepath.Clean(out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("longbench: output parent %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return fmt.Errorf("longbench: temp output dir: %w", err)
	}
	ok := false
	release := shutdown.OnExit(func() { os.RemoveAll(tmp) }) // a forced exit on a signal
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
		release() // after the removal: a forced exit meanwhile removes it too
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := fill(tmp); err != nil {
		return err
	}
	// The swap is one critical section: a forced exit on a signal waits
	// for it, so out is never left moved aside.
	var old string
	err = shutdown.Critical(func() error {
		if _, err := checkOut(out, overwrite); err != nil {
			return err
		}
		// An empty existing directory can simply be replaced; a non-empty one
		// (overwrite) is moved aside first and removed after the swap.
		if _, err := os.Lstat(out); err == nil {
			if rmErr := os.Remove(out); rmErr != nil {
				old = tmp + ".old"
				if err := os.Rename(out, old); err != nil {
					return fmt.Errorf("longbench: move aside %s: %w", out, err)
				}
			}
		}
		if err := os.Rename(tmp, out); err != nil {
			if old != "" {
				os.Rename(old, out)
			}
			return fmt.Errorf("longbench: rename %s to %s: %w", tmp, out, err)
		}
		ok = true
		return nil
	})
	if err != nil {
		return err
	}
	if old != "" {
		os.RemoveAll(old)
	}
	if d, err := os.Open(parent); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
