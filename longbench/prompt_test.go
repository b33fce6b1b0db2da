package longbench

import (
	"errors"
	"strings"
	"testing"
)

// toyConfig writes a config of our own templates and loads it.
func toyConfig(t testing.TB) *Config {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		PromptFile: `{"qa": "Doc: {context}\nQ: {input}\nA:", "raw": "{context}", "trec": "{context}|{input}", "sum": "S {context}"}`,
		MaxLenFile: `{"qa": 4, "raw": 2, "trec": 8, "sum": 16}`,
	})
	c, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestApplyChatLayout(t *testing.T) {
	tests := []struct {
		noThinking bool
		want       string
	}{
		{false, "<|im_start|>user\nP<|im_end|>\n<|im_start|>assistant\n"},
		{true, "<|im_start|>user\nP<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
	}
	for _, tc := range tests {
		if got := ApplyChat("P", tc.noThinking); got != tc.want {
			t.Errorf("noThinking=%v: %q, want %q", tc.noThinking, got, tc.want)
		}
	}
}

func TestTruncateMiddle(t *testing.T) {
	tok := byteTok{}
	tests := []struct {
		name, text string
		maxLen     int
		want       string
	}{
		{"even", "abcdefghij", 4, "abij"},
		{"odd keeps 2*half", "abcdefghij", 5, "abij"},
		{"specials skipped", "ab<|im_end|>cdefg<|im_start|>h", 6, "abgh"},
		{"non-special kept", "<think>bcdefgh</think>", 4, "<think>bh</think>"},
		{"whole runes", "éabcdé", 6, "éadé"},
		{"split utf8 decodes lossily", "éabcdé", 2, "\uFFFD\uFFFD"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ids := tok.Encode(tc.text)
			if got := TruncateMiddle(tok, ids, tc.maxLen); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPrompterBuild(t *testing.T) {
	cfg := toyConfig(t)
	rec := func(subset, ctx, in string) *Record {
		return &Record{Version: V1, Subset: subset, ID: "r", Line: 7, Context: ctx, Input: in}
	}
	tests := []struct {
		name      string
		opts      PromptOptions
		rec       *Record
		wantText  string
		wantTrunc bool
		wantRaw   int
		wantMax   int
	}{
		{name: "chat", opts: PromptOptions{ContextLen: 100}, rec: rec("qa", "xyz", "why"),
			wantText: ChatHead + "Doc: xyz\nQ: why\nA:" + ChatTail, wantRaw: 18, wantMax: 96 - toyChat(false)},
		{name: "no thinking", opts: PromptOptions{ContextLen: 100, NoThinking: true}, rec: rec("qa", "xyz", "why"),
			wantText: ChatHead + "Doc: xyz\nQ: why\nA:" + ChatTail + ChatNoThinking, wantRaw: 18, wantMax: 96 - toyChat(true)},
		{name: "trec skips chat", opts: PromptOptions{ContextLen: 100, NoThinking: true}, rec: rec("trec", "c", "i"),
			wantText: "c|i", wantRaw: 3, wantMax: 92},
		{name: "no chat option", opts: PromptOptions{ContextLen: 100, NoChat: true}, rec: rec("qa", "x", "y"),
			wantText: "Doc: x\nQ: y\nA:", wantRaw: 14, wantMax: 96},
		// budget = 12 + template - 2 - template = 10, half 5: "01234" + "bcdef" of "0123456789abcdef"
		{name: "default budget truncates", opts: PromptOptions{ContextLen: 12 + toyChat(false)}, rec: rec("raw", "0123456789abcdef", ""),
			wantText: ChatHead + "01234bcdef" + ChatTail, wantTrunc: true, wantRaw: 16, wantMax: 10},
		{name: "exactly at budget is kept", opts: PromptOptions{ContextLen: 12 + toyChat(false)}, rec: rec("raw", "0123456789", ""),
			wantText: ChatHead + "0123456789" + ChatTail, wantRaw: 10, wantMax: 10},
		{name: "fixed budget", opts: PromptOptions{MaxLen: 6, NoThinking: true}, rec: rec("sum", "abcdefgh", ""),
			wantText: ChatHead + "S afgh" + ChatTail + ChatNoThinking, wantTrunc: true, wantRaw: 10, wantMax: 6},
		{name: "truncation before chat, trec", opts: PromptOptions{MaxLen: 4}, rec: rec("trec", "abcdef", "gh"),
			wantText: "ab" + "gh", wantTrunc: true, wantRaw: 9, wantMax: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPrompter(cfg, byteTok{}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Build(tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != tc.wantText || got.Truncated != tc.wantTrunc || got.RawTokens != tc.wantRaw || got.MaxLen != tc.wantMax {
				t.Errorf("got %q trunc=%v raw=%d max=%d, want %q %v %d %d", got.Text, got.Truncated, got.RawTokens, got.MaxLen,
					tc.wantText, tc.wantTrunc, tc.wantRaw, tc.wantMax)
			}
			if want := (byteTok{}).Encode(got.Text); len(got.IDs) != len(want) {
				t.Errorf("ids %d, want %d", len(got.IDs), len(want))
			}
			if got.Chat != strings.HasPrefix(got.Text, ChatHead) {
				t.Errorf("Chat=%v for %q", got.Chat, got.Text)
			}
		})
	}
}

func TestPrompterErrors(t *testing.T) {
	cfg := toyConfig(t)
	p, _ := NewPrompter(cfg, byteTok{}, PromptOptions{ContextLen: 3})
	if _, err := p.Plan("sum", V1); !errors.Is(err, ErrBudget) {
		t.Errorf("budget below 2: %v", err)
	}
	p, _ = NewPrompter(cfg, byteTok{}, PromptOptions{})
	if _, err := p.Plan("qa", V2); !errors.Is(err, ErrUnknownField) || !strings.Contains(err.Error(), `"input"`) {
		t.Errorf("v1 template with v2 records: %v", err)
	}
	if _, err := p.Plan("nosuch", V1); !errors.Is(err, ErrTemplate) {
		t.Errorf("unknown subset: %v", err)
	}
	if _, err := NewPrompter(cfg, byteTok{}, PromptOptions{MaxLen: -1}); !errors.Is(err, ErrOptions) {
		t.Errorf("negative MaxLen: %v", err)
	}
}

// badTok decodes to invalid UTF-8.
type badTok struct{ byteTok }

func (badTok) Decode([]int, bool) string { return "\xff" }

func TestPrompterInvalidUTF8(t *testing.T) {
	p, _ := NewPrompter(toyConfig(t), badTok{}, PromptOptions{MaxLen: 2})
	_, err := p.Build(&Record{Version: V1, Subset: "raw", Context: "abcdef"})
	if !errors.Is(err, ErrTokenizer) {
		t.Fatalf("err = %v", err)
	}
}

func TestSpectralKVRecipe(t *testing.T) {
	o := SpectralKVRecipe()
	if o.MaxLen != 40900 || o.MaxLen/2 != 20450 || !o.NoThinking || o.NoChat {
		t.Errorf("%+v", o)
	}
}

// toyChat is the chat template's token count under byteTok.
func toyChat(noThinking bool) int { return len(byteTok{}.Encode(ApplyChat("", noThinking))) }
