// Package qwen3test holds the integration tests of package longbench with
// the real Qwen3 tokenizer (package longbench/tokenizer). They live apart so
// that longbench's own tests never depend on the tokenizer package building.
//
// The tests need Qwen3's tokenizer.json: GOLDSET_QWEN3_TOKENIZER, or the copy
// that `npm ci` installs under longbench/tokenizer/testdata/jsref. They skip
// when it is absent, and fail instead when GOLDSET_REQUIRE_TOOLS=1.
//
// TestQwen3ReproducesSpectralKV checks the sample README's recipe exactly:
// reading qwen3/<subset>.reconstructed.jsonl and building with
// longbench.SpectralKVRecipe yields the input_ids, prompt_tokens and
// prompt_sha256 of qwen3/<subset>.jsonl.
package qwen3test
