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

// Truncation policies: how the middle-truncation budget (tokens of the
// formatted prompt, before the chat template) is chosen per subset.
const (
	// PolicyFit (the default): context_len - max_new_tokens - chat template
	// tokens, so that prompt + output fits the context by construction.
	PolicyFit = "fit"
	// PolicyLongBench: LongBench pred.py's config/model2maxlen.json values,
	// the model's context minus 500 (THUDM/LongBench 7738f1d: 4k models
	// 3500, 8k 7500, 16k 15500, 32k 31500). Subsets whose output plus
	// template exceeds 500 tokens do not fit under it and fail with ErrBudget
	// (for Qwen3, gov_report, qmsum, multi_news and vcsum: 512 new tokens).
	PolicyLongBench = "longbench"
	// PolicyFixed: PromptOptions.MaxLen for every subset (--truncate-at).
	PolicyFixed = "fixed"
)

// LongBenchMargin is what pred.py's model2maxlen.json leaves free of the
// model's context (PolicyLongBench).
const LongBenchMargin = 500

// PromptOptions define the prompt recipe.
type PromptOptions struct {
	// ContextLen is the model's context window; DefaultContextLen when zero.
	// Every prompt satisfies prompt_tokens + max_new_tokens <= ContextLen.
	ContextLen int
	// MaxLen, when positive, is the fixed truncation budget (tokens of the
	// formatted prompt, before the chat template) for every subset
	// (PolicyFixed). A budget that cannot fit the context with the subset's
	// output and the chat template fails with ErrBudget.
	MaxLen int
	// Policy is PolicyFit (when empty and MaxLen is zero), PolicyLongBench,
	// or PolicyFixed (implied by MaxLen > 0).
	Policy string
	// NoThinking appends ChatNoThinking (Qwen3 enable_thinking=False).
	NoThinking bool
	// NoChat disables the chat template for every subset.
	NoChat bool
	// AllowOverBudget skips the context check. Only for reproducing
	// reference files that were built without it (SpectralKVRecipe); Build
	// refuses it, since a request over the context fails in vLLM.
	AllowOverBudget bool
}

// SpectralKVRecipe is the recipe documented in the sample's README
// (spectralKV's Qwen3-4B LongBench prefill): fixed budget 40900 tokens
// (half 20450) and thinking disabled. Its prompts plus their outputs can
// exceed Qwen3's 40960 context, so it sets AllowOverBudget and serves only
// to reproduce those files.
func SpectralKVRecipe() PromptOptions {
	return PromptOptions{MaxLen: 40900, NoThinking: true, AllowOverBudget: true}
}

func (o PromptOptions) contextLen() int {
	if o.ContextLen <= 0 {
		return DefaultContextLen
	}
	return o.ContextLen
}

func (o PromptOptions) policy() string {
	if o.MaxLen > 0 {
		return PolicyFixed
	}
	if o.Policy == "" {
		return PolicyFit
	}
	return o.Policy
}

// Prompt is one finished prompt.
type Prompt struct {
	Subset string
	ID     string
	Line   int

	Text         string // the exact string that was tokenized (chat template included)
	User         string // the prompt before the chat template (equals Text without one)
	IDs          []int  // Encode(Text)
	RawTokens    int    // tokens of the formatted prompt before truncation
	MaxLen       int    // truncation budget that applied last
	Truncated    bool
	Chat         bool // chat template applied
	MaxNewTokens int  // generation length (dataset2maxlen.json)
	Target       int  // length-set target of prompt + output (0: none)
}

// SHA256 is the hex sha256 of the UTF-8 prompt text (spectralKV's prompt_sha256).
func (p *Prompt) SHA256() string {
	sum := sha256.Sum256([]byte(p.Text))
	return hex.EncodeToString(sum[:])
}

// Total is prompt tokens plus output tokens: what must fit the context.
func (p *Prompt) Total() int { return len(p.IDs) + p.MaxNewTokens }

// Prompter builds prompts as LongBench's pred.py does.
type Prompter struct {
	cfg  *Config
	tok  Tokenizer
	opts PromptOptions
	// chatTokens is the token count of the chat template around an empty
	// prompt (Qwen3: 8, 12 with the empty think block).
	chatTokens int
	// format, when set, replaces the subsets' str.format templates (a
	// LongBench v2 $DOC$ template file).
	format Formatter
}

// Formatter turns a record into the formatted prompt (before truncation).
type Formatter interface {
	FormatRecord(rec *Record) (string, error)
	CheckFields(v Version) error
}

// NewPrompter returns a Prompter using cfg's templates and generation lengths.
func NewPrompter(cfg *Config, tok Tokenizer, opts PromptOptions) (*Prompter, error) {
	if cfg == nil || tok == nil {
		panic("longbench: NewPrompter: nil config or tokenizer")
	}
	if opts.MaxLen < 0 || opts.ContextLen < 0 {
		return nil, fmt.Errorf("longbench: negative MaxLen or ContextLen: %w", ErrOptions)
	}
	switch opts.Policy {
	case "", PolicyFit, PolicyLongBench, PolicyFixed:
	default:
		return nil, fmt.Errorf("longbench: truncation policy %q (want %s, %s or %s): %w", opts.Policy, PolicyFit, PolicyLongBench, PolicyFixed, ErrOptions)
	}
	if opts.MaxLen > 0 && opts.Policy != "" && opts.Policy != PolicyFixed {
		return nil, fmt.Errorf("longbench: a fixed truncation budget (%d) and policy %q exclude each other: %w", opts.MaxLen, opts.Policy, ErrOptions)
	}
	if opts.Policy == PolicyFixed && opts.MaxLen == 0 {
		return nil, fmt.Errorf("longbench: policy %q needs a truncation budget (MaxLen, --truncate-at): %w", PolicyFixed, ErrOptions)
	}
	return &Prompter{cfg: cfg, tok: tok, opts: opts, chatTokens: len(tok.Encode(ApplyChat("", opts.NoThinking)))}, nil
}

// SetFormatter makes every subset use f instead of its dataset2prompt.json
// template (for LongBench v2's $DOC$ template files).
func (p *Prompter) SetFormatter(f Formatter) { p.format = f }

// ChatTokens is the number of tokens the chat template adds around a prompt.
func (p *Prompter) ChatTokens() int { return p.chatTokens }

// SubsetPlan is the recipe resolved for one subset.
type SubsetPlan struct {
	Subset         string `json:"subset"`
	TemplateKey    string `json:"template_key"`
	MaxNewTokens   int    `json:"max_new_tokens"`
	MaxLen         int    `json:"max_len"`
	Policy         string `json:"truncation_policy"`
	Chat           bool   `json:"chat_template"`
	TemplateTokens int    `json:"chat_template_tokens"`
}

func (p *Prompter) formatter(subset string) (Formatter, error) {
	if p.format != nil {
		return p.format, nil
	}
	return p.cfg.Template(subset)
}

// Plan resolves template, generation length, truncation budget and chat use
// for a subset, and checks the template's fields against version v and the
// budget against the context, so that configuration errors surface before
// any tokenization.
func (p *Prompter) Plan(subset string, v Version) (SubsetPlan, error) {
	t, err := p.formatter(subset)
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
	key := p.cfg.Key(subset)
	chat := !p.opts.NoChat && !skipsChat(key)
	tmpl := 0
	if chat {
		tmpl = p.chatTokens
	}
	ctxLen := p.opts.contextLen()
	pol := p.opts.policy()
	var maxLen int
	switch pol {
	case PolicyFixed:
		maxLen = p.opts.MaxLen
	case PolicyLongBench:
		maxLen = ctxLen - LongBenchMargin
	default:
		maxLen = ctxLen - gen - tmpl
	}
	if maxLen < 2 {
		return SubsetPlan{}, fmt.Errorf("longbench: subset %q: truncation budget %d (context %d, max_new_tokens %d, chat template %d, policy %s) leaves no room: %w",
			subset, maxLen, ctxLen, gen, tmpl, pol, ErrBudget)
	}
	if !p.opts.AllowOverBudget && maxLen+tmpl+gen > ctxLen {
		return SubsetPlan{}, fmt.Errorf("longbench: subset %q: truncation budget %d (policy %s) + chat template %d + max_new_tokens %d = %d tokens > context_len %d (use policy %s, or a budget <= %d): %w",
			subset, maxLen, pol, tmpl, gen, maxLen+tmpl+gen, ctxLen, PolicyFit, ctxLen-tmpl-gen, ErrBudget)
	}
	return SubsetPlan{Subset: subset, TemplateKey: key, MaxNewTokens: gen, MaxLen: maxLen, Policy: pol, Chat: chat, TemplateTokens: tmpl}, nil
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
	return p.buildTo(rec, plan, 0)
}

// maxFitTries bounds the re-truncation loop; one pass suffices unless the
// seam of the two decoded halves re-tokenizes differently.
const maxFitTries = 8

// buildTo builds rec's prompt. With target == 0 the truncation budget is
// plan.MaxLen, lowered (and the prompt truncated again) by however many
// tokens the final prompt plus output exceeds the context: re-encoding the
// decoded halves, or a prompt starting or ending where the chat template
// joins it, can shift the count by a few tokens. With target > 0 (length
// sets) the budget is moved until prompt + output is exactly target, or the
// closest below it the tokenizer allows.
func (p *Prompter) buildTo(rec *Record, plan SubsetPlan, target int) (Prompt, error) {
	t, err := p.formatter(rec.Subset)
	if err != nil {
		return Prompt{}, err
	}
	text, err := t.FormatRecord(rec)
	if err != nil {
		return Prompt{}, fmt.Errorf("%w (record %s, %s line %d)", err, rec.ID, rec.Subset, rec.Line)
	}
	raw := p.tok.Encode(text)
	limit, budget := p.opts.contextLen(), plan.MaxLen
	if target > 0 {
		limit = min(target, limit)
		budget = limit - plan.MaxNewTokens - plan.TemplateTokens
	}
	var best *Prompt
	for try := 0; try < maxFitTries && budget >= 2; try++ {
		out, err := p.assemble(rec, plan, text, raw, budget, target > 0)
		if err != nil {
			return Prompt{}, err
		}
		out.Target = target
		over := out.Total() - limit
		if p.opts.AllowOverBudget || over == 0 || (over < 0 && (target == 0 || !out.Truncated)) {
			return out, nil
		}
		if over < 0 && (best == nil || out.Total() > best.Total()) {
			o := out
			best = &o
		}
		if over > 0 && target > 0 && try > maxFitTries/2 {
			over = 1 // oscillating across the target: creep down one token at a time
		}
		budget -= over
	}
	if best != nil && target > 0 && best.Truncated {
		// The seam re-tokenizes so that no budget hits the target: move the
		// cut point instead (same budget, other head/tail split).
		for _, db := range []int{0, 1, -1, 2, -2} {
			b := best.MaxLen + db
			for _, dh := range []int{1, -1, 2, -2, 3, -3, 4, -4} {
				h := (b+1)/2 + dh
				if h < 1 || b-h < 1 || b >= len(raw) {
					continue
				}
				out, err := p.assembleSplit(rec, plan, text, raw, h, b-h)
				if err != nil {
					return Prompt{}, err
				}
				if out.Total() == limit {
					out.Target = target
					return out, nil
				}
			}
		}
	}
	if best != nil {
		return *best, nil
	}
	return Prompt{}, fmt.Errorf("longbench: record %s (%s line %d): no truncation budget fits %d prompt + output tokens (chat template %d, max_new_tokens %d): %w",
		rec.ID, rec.Subset, rec.Line, limit, plan.TemplateTokens, plan.MaxNewTokens, ErrBudget)
}

// assemble truncates the formatted text (tokens raw) to budget, applies the
// chat template and tokenizes the result.
//
// pred.py keeps max_len/2 tokens from each end, so an odd budget keeps one
// token less than it allows; length sets (oddHead) give the head the extra
// token, so that every total can be reached.
func (p *Prompter) assemble(rec *Record, plan SubsetPlan, text string, raw []int, budget int, oddHead bool) (Prompt, error) {
	head, tail := budget/2, budget/2
	if oddHead {
		head = (budget + 1) / 2
	}
	out, err := p.assembleSplit(rec, plan, text, raw, head, tail)
	out.MaxLen = budget
	return out, err
}

// assembleSplit keeps head tokens from the start and tail from the end of a
// formatted prompt longer than head + tail.
func (p *Prompter) assembleSplit(rec *Record, plan SubsetPlan, text string, raw []int, head, tail int) (Prompt, error) {
	budget := head + tail
	out := Prompt{Subset: rec.Subset, ID: rec.ID, Line: rec.Line, RawTokens: len(raw), MaxLen: budget,
		Chat: plan.Chat, MaxNewTokens: plan.MaxNewTokens}
	user := text
	if len(raw) > budget {
		user = p.tok.Decode(raw[:head], true) + p.tok.Decode(raw[len(raw)-tail:], true)
		out.Truncated = true
	}
	final := user
	if plan.Chat {
		final = ApplyChat(user, p.opts.NoThinking)
	}
	if !utf8.ValidString(final) {
		return Prompt{}, fmt.Errorf("longbench: record %s (%s line %d): Decode produced invalid UTF-8: %w", rec.ID, rec.Subset, rec.Line, ErrTokenizer)
	}
	out.Text, out.User = final, user
	out.IDs = p.tok.Encode(final)
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

// rawTokens is the token count of rec's formatted prompt before truncation.
func (p *Prompter) rawTokens(rec *Record) (int, error) {
	t, err := p.formatter(rec.Subset)
	if err != nil {
		return 0, err
	}
	text, err := t.FormatRecord(rec)
	if err != nil {
		return 0, fmt.Errorf("%w (record %s, %s line %d)", err, rec.ID, rec.Subset, rec.Line)
	}
	return len(p.tok.Encode(text)), nil
}
