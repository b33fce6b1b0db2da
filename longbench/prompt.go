package longbench

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"unicode/utf8"
)

// Tokenizer is what the prompt pipeline needs from a tokenizer. Encode must
// treat special-token text such as "<|im_start|>" as the special token (as
// Hugging Face tokenizers do by default) and add no BOS; Decode with
// skipSpecial=true drops special tokens and must return valid UTF-8.
// Build calls Encode and Decode from several goroutines at once unless
// BuildOptions.Workers is 1.
type Tokenizer interface {
	Encode(text string) []int
	Decode(ids []int, skipSpecial bool) string
}

// Qwen3 chat template for a single user turn with add_generation_prompt=True,
// as Qwen3's tokenizer_config.json renders it.
const (
	ChatHead       = "<|im_start|>user\n"
	ChatTail       = "<|im_end|>\n<|im_start|>assistant\n"
	ChatNoThinking = "<think>\n\n</think>\n\n" // appended when enable_thinking=False
)

// DefaultContextLen is Qwen3's max_position_embeddings.
const DefaultContextLen = 40960

// NoChatSubsets are the tasks LongBench's pred.py leaves without a chat
// template ("chat models are better off without build prompts on these tasks").
var NoChatSubsets = []string{"trec", "triviaqa", "samsum", "lsht", "lcc", "repobench-p"}

func skipsChat(key string) bool {
	for _, s := range NoChatSubsets {
		if s == key {
			return true
		}
	}
	return false
}

// PromptOptions define the prompt recipe.
type PromptOptions struct {
	// ContextLen is the model's context window; DefaultContextLen when zero.
	ContextLen int
	// MaxLen, when positive, is the fixed truncation budget (tokens of the
	// formatted prompt, before the chat template) for every subset. When
	// zero the budget is ContextLen minus the subset's max generation length.
	MaxLen int
	// NoThinking appends ChatNoThinking (Qwen3 enable_thinking=False).
	NoThinking bool
	// NoChat disables the chat template for every subset.
	NoChat bool
}

// SpectralKVRecipe is the recipe documented in the sample's README
// (spectralKV's Qwen3-4B LongBench prefill): fixed budget 40900 tokens
// (half 20450) and thinking disabled.
func SpectralKVRecipe() PromptOptions {
	return PromptOptions{MaxLen: 40900, NoThinking: true}
}

func (o PromptOptions) contextLen() int {
	if o.ContextLen <= 0 {
		return DefaultContextLen
	}
	return o.ContextLen
}

// Prompt is one finished prompt.
type Prompt struct {
	Subset string
	ID     string
	Line   int

	Text         string // the exact string that was tokenized (chat template included)
	IDs          []int  // Encode(Text)
	RawTokens    int    // tokens of the formatted prompt before truncation
	MaxLen       int    // truncation budget that applied
	Truncated    bool
	Chat         bool // chat template applied
	MaxNewTokens int  // generation length (dataset2maxlen.json)
}

// SHA256 is the hex sha256 of the UTF-8 prompt text (spectralKV's prompt_sha256).
func (p *Prompt) SHA256() string {
	sum := sha256.Sum256([]byte(p.Text))
	return hex.EncodeToString(sum[:])
}

// Prompter builds prompts as LongBench's pred.py does.
type Prompter struct {
	cfg  *Config
	tok  Tokenizer
	opts PromptOptions
}

// NewPrompter returns a Prompter using cfg's templates and generation lengths.
func NewPrompter(cfg *Config, tok Tokenizer, opts PromptOptions) (*Prompter, error) {
	if cfg == nil || tok == nil {
		panic("longbench: NewPrompter: nil config or tokenizer")
	}
	if opts.MaxLen < 0 || opts.ContextLen < 0 {
		return nil, fmt.Errorf("longbench: negative MaxLen or ContextLen: %w", ErrOptions)
	}
	return &Prompter{cfg: cfg, tok: tok, opts: opts}, nil
}

// SubsetPlan is the recipe resolved for one subset.
type SubsetPlan struct {
	Subset       string `json:"subset"`
	TemplateKey  string `json:"template_key"`
	MaxNewTokens int    `json:"max_new_tokens"`
	MaxLen       int    `json:"max_len"`
	Chat         bool   `json:"chat_template"`
}

// Plan resolves template, generation length, truncation budget and chat use
// for a subset, and checks the template's fields against version v, so that
// configuration errors surface before any tokenization.
func (p *Prompter) Plan(subset string, v Version) (SubsetPlan, error) {
	t, err := p.cfg.Template(subset)
	if err != nil {
		return SubsetPlan{}, err
	}
	if err := t.CheckFields(v); err != nil {
		return SubsetPlan{}, err
	}
	gen, err := p.cfg.MaxGen(subset)
	if err != nil {
		return SubsetPlan{}, err
	}
	maxLen := p.opts.MaxLen
	if maxLen == 0 {
		maxLen = p.opts.contextLen() - gen
	}
	if maxLen < 2 {
		return SubsetPlan{}, fmt.Errorf("longbench: subset %q: truncation budget %d (context %d, max_gen %d) leaves no room: %w",
			subset, maxLen, p.opts.contextLen(), gen, ErrOptions)
	}
	key := p.cfg.Key(subset)
	return SubsetPlan{Subset: subset, TemplateKey: key, MaxNewTokens: gen, MaxLen: maxLen, Chat: !p.opts.NoChat && !skipsChat(key)}, nil
}

// Build formats rec with its subset's template, truncates it in the middle
// to the budget, applies the chat template and tokenizes the result.
func (p *Prompter) Build(rec *Record) (Prompt, error) {
	plan, err := p.Plan(rec.Subset, rec.Version)
	if err != nil {
		return Prompt{}, err
	}
	return p.build(rec, plan)
}

func (p *Prompter) build(rec *Record, plan SubsetPlan) (Prompt, error) {
	t, err := p.cfg.Template(rec.Subset)
	if err != nil {
		return Prompt{}, err
	}
	text, err := t.FormatRecord(rec)
	if err != nil {
		return Prompt{}, fmt.Errorf("%w (record %s, %s line %d)", err, rec.ID, rec.Subset, rec.Line)
	}
	ids := p.tok.Encode(text)
	out := Prompt{Subset: rec.Subset, ID: rec.ID, Line: rec.Line, RawTokens: len(ids), MaxLen: plan.MaxLen,
		Chat: plan.Chat, MaxNewTokens: plan.MaxNewTokens}
	if len(ids) > plan.MaxLen {
		text = TruncateMiddle(p.tok, ids, plan.MaxLen)
		out.Truncated = true
	}
	if plan.Chat {
		text = ApplyChat(text, p.opts.NoThinking)
	}
	if !utf8.ValidString(text) {
		return Prompt{}, fmt.Errorf("longbench: record %s (%s line %d): Decode produced invalid UTF-8: %w", rec.ID, rec.Subset, rec.Line, ErrTokenizer)
	}
	out.Text = text
	out.IDs = p.tok.Encode(text)
	for _, id := range out.IDs {
		if id < 0 || id > math.MaxInt32 {
			return Prompt{}, fmt.Errorf("longbench: record %s: token id %d does not fit int32: %w", rec.ID, id, ErrTokenizer)
		}
	}
	return out, nil
}

// TruncateMiddle implements pred.py's truncation of ids (the tokens of a
// prompt longer than maxLen): with half = maxLen/2 it returns
// Decode(ids[:half], true) + Decode(ids[len(ids)-half:], true).
func TruncateMiddle(tok Tokenizer, ids []int, maxLen int) string {
	half := maxLen / 2
	if half > len(ids) {
		half = len(ids)
	}
	return tok.Decode(ids[:half], true) + tok.Decode(ids[len(ids)-half:], true)
}

// ApplyChat wraps prompt in the Qwen3 chat template for one user message.
func ApplyChat(prompt string, noThinking bool) string {
	s := ChatHead + prompt + ChatTail
	if noThinking {
		s += ChatNoThinking
	}
	return s
}
