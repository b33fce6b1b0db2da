"""A stand-in for vLLM's offline API, for testing run_vllm_offline.py without a GPU or model.

LLM.generate echoes each TokensPrompt's ids as the prompt and returns max_tokens output tokens
(one fewer when GOLDSET_STUB_SHORT=1, to check that the script refuses a short run).
"""
import os
import types


class SamplingParams:
    def __init__(self, max_tokens, temperature, ignore_eos):
        assert temperature == 0.0 and ignore_eos is True
        self.max_tokens = max_tokens


class LLM:
    def __init__(self, model, max_model_len, tensor_parallel_size, gpu_memory_utilization, enable_prefix_caching):
        assert enable_prefix_caching is False
        self.max_model_len = max_model_len

    def generate(self, prompts, params, use_tqdm=True):
        short = os.environ.get("GOLDSET_STUB_SHORT") == "1"
        outs = []
        for p, sp in zip(prompts, params):
            ids = p["prompt_token_ids"]
            assert len(ids) + sp.max_tokens <= self.max_model_len
            n = sp.max_tokens - (1 if short else 0)
            outs.append(types.SimpleNamespace(prompt_token_ids=ids, outputs=[types.SimpleNamespace(token_ids=[0] * n, text="!" * n)]))
        return outs
