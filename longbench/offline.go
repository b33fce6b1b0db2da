package longbench

// offlineScript is run_vllm_offline.py, written beside prompt_ids.jsonl:
// vLLM offline throughput over the exact token ids, since
// `vllm bench throughput` reads long prompts only through its ShareGPT
// loader, which drops every prompt over 1024 tokens.
const offlineScript = `#!/usr/bin/env python3
"""vLLM offline throughput over a goldset LongBench workload (written by goldset longbench build).

Reads prompt_ids.jsonl ({"custom_id", "prompt_token_ids", "max_tokens"} per line), sends every
request at once to vllm.LLM.generate as TokensPrompt with SamplingParams(max_tokens=max_tokens,
temperature=0, ignore_eos=True), and writes requests/s and tokens/s. The ids already hold the chat
template, so no template is applied. It exits non-zero unless every request came back with
len(prompt_token_ids) prompt tokens and exactly max_tokens output tokens, so a result always
measured this workload. Each request's generated text and token ids are kept for scoring.

    python run_vllm_offline.py --model MODEL --max-model-len CONTEXT --prompts prompt_ids.jsonl --output vllm.offline.json
"""
import argparse
import hashlib
import json
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--max-model-len", type=int, required=True)
    ap.add_argument("--prompts", default="prompt_ids.jsonl")
    ap.add_argument("--output", default="vllm.offline.json")
    ap.add_argument("--tensor-parallel-size", type=int, default=1)
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    ap.add_argument("--enable-prefix-caching", action="store_true", help="off by default: a rerun must not be a cache hit")
    args = ap.parse_args()

    reqs = []
    with open(args.prompts, "rb") as f:
        raw = f.read()
    for n, line in enumerate(raw.decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        r = json.loads(line)
        ids, mx = r["prompt_token_ids"], r["max_tokens"]
        if len(ids) + mx > args.max_model_len:
            sys.exit(f"{args.prompts}:{n}: {r['custom_id']}: {len(ids)} + {mx} tokens > --max-model-len {args.max_model_len}")
        reqs.append(r)

    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    llm = LLM(model=args.model, max_model_len=args.max_model_len, tensor_parallel_size=args.tensor_parallel_size,
              gpu_memory_utilization=args.gpu_memory_utilization, enable_prefix_caching=args.enable_prefix_caching)
    prompts = [TokensPrompt(prompt_token_ids=r["prompt_token_ids"]) for r in reqs]
    params = [SamplingParams(max_tokens=r["max_tokens"], temperature=0.0, ignore_eos=True) for r in reqs]
    start = time.perf_counter()
    outs = llm.generate(prompts, params, use_tqdm=True)
    elapsed = time.perf_counter() - start

    bad = []
    per = []
    for r, o in zip(reqs, outs):
        pin, gen = len(o.prompt_token_ids), len(o.outputs[0].token_ids)
        # The text and token ids are what goldset serving score grades (LongBench metrics, greedy agreement).
        per.append({"custom_id": r["custom_id"], "prompt_tokens": pin, "output_tokens": gen,
                    "text": o.outputs[0].text, "output_token_ids": list(o.outputs[0].token_ids)})
        if pin != len(r["prompt_token_ids"]) or gen != r["max_tokens"]:
            bad.append(f"{r['custom_id']}: prompt {pin} (want {len(r['prompt_token_ids'])}), output {gen} (want {r['max_tokens']})")
    total_in = sum(p["prompt_tokens"] for p in per)
    total_out = sum(p["output_tokens"] for p in per)
    result = {
        "tool": "run_vllm_offline.py (goldset)",
        "model": args.model,
        "max_model_len": args.max_model_len,
        "prompts_file": args.prompts,
        "prompts_sha256": hashlib.sha256(raw).hexdigest(),
        "num_requests": len(reqs),
        "completed": len(outs),
        "failed": len(bad),
        "elapsed_s": elapsed,
        "requests_per_s": len(outs) / elapsed,
        "input_tokens": total_in,
        "output_tokens": total_out,
        "output_tokens_per_s": total_out / elapsed,
        "total_tokens_per_s": (total_in + total_out) / elapsed,
        "requests": per,
    }
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    print(f"{len(outs)} requests in {elapsed:.2f} s: {len(outs) / elapsed:.3f} req/s, "
          f"{total_out / elapsed:.1f} output tok/s, {(total_in + total_out) / elapsed:.1f} total tok/s -> {args.output}")
    if bad or len(outs) != len(reqs):
        sys.exit("requests that did not run as written:\n  " + "\n  ".join(bad))


if __name__ == "__main__":
    main()
`
