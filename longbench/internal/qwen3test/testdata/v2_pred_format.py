"""Format LongBench v2 records exactly as LongBench v2's pred.py does (THUDM/LongBench pred.py,
get_pred: template.replace('$DOC$', context.strip()).replace('$Q$', question.strip())
.replace('$C_A$', ...)...), and print "_id sha256(formatted prompt)" per record.

    python3 v2_pred_format.py 0shot.txt longbench_v2.jsonl
"""
import hashlib
import json
import sys


def main():
    template = open(sys.argv[1], encoding="utf-8").read()
    with open(sys.argv[2], encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            item = json.loads(line)
            prompt = template.replace('$DOC$', item['context'].strip()).replace('$Q$', item['question'].strip()).replace('$C_A$', item['choice_A'].strip()).replace('$C_B$', item['choice_B'].strip()).replace('$C_C$', item['choice_C'].strip()).replace('$C_D$', item['choice_D'].strip())
            print(item["_id"], hashlib.sha256(prompt.encode("utf-8")).hexdigest())


if __name__ == "__main__":
    main()
