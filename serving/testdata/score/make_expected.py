#!/usr/bin/env python3
"""Expected LongBench scores of the serving score fixture, computed by LongBench's own scoring code.

Sources, transcribed below function by function (only the Python needed to score; file reading replaced):
  - THUDM/LongBench metrics.py @ f6227eb7a25cacbd96310aea2c59af003f8d8925 (v1 metrics, verbatim bodies)
  - THUDM/LongBench LongBench/eval.py @ 072a5a739b05ab3c98ff1ea922c5293ebe317b75 (dataset2metric, scorer, scorer_e)
  - THUDM/LongBench pred.py @ c5ea10bcd06285223c58dfed76bbc92d22273709 (v2 extract_answer; response = output.strip())
  - THUDM/LongBench result.py @ 5214a555c1096fae7fc2ffbe7bf1a0f3295e25aa (v2 accuracy: overall/easy/hard/short/medium/long)
  - the `rouge` package 1.0.1 (pltrdy/rouge; rouge/__init__.py @ 657d4d2f61892fb6c5aaf8796e93ebd3ed88e857 says 1.0.1):
    rouge/rouge.py @ 53a6fc59474648d95c1a45a1f660d15eafcdebb6 (Rouge.get_scores, _get_avg_scores) and
    rouge/rouge_score.py @ 12ed0ade0350fbd211e73b8c524b09e1266c598f (Ngrams, rouge_n, rouge_l_summary_level).
    `rouge` is not packaged in Debian 12 (apt-cache has no python3-rouge) and pip has no network here, so it is
    transcribed; fuzzywuzzy (python3-fuzzywuzzy 0.18.0 with python3-levenshtein 0.12.2, so fuzz.ratio uses
    Levenshtein.ratio), jieba (python3-jieba 0.42.1) and numpy (python3-numpy 1.24.2) are the real packages.

Run with Debian's python3 after `apt-get install python3-fuzzywuzzy python3-levenshtein python3-jieba python3-numpy`:
    /usr/bin/python3 serving/testdata/score/make_expected.py serving/testdata/score > serving/testdata/score/expected.json
Nothing here is part of CI; serving/score_test.go reads expected.json.
"""
import itertools
import json
import os
import re
import string
import sys
from collections import Counter
from copy import deepcopy

import difflib
import jieba
import numpy as np
from fuzzywuzzy import fuzz

jieba.setLogLevel(60)

# ---- rouge 1.0.1: rouge/rouge_score.py @ 12ed0ade --------------------------------------------------------------


class Ngrams(object):
    def __init__(self, ngrams={}, exclusive=True):
        if exclusive:
            self._ngrams = set(ngrams)
        else:
            self._ngrams = list(ngrams)
        self.exclusive = exclusive

    def add(self, o):
        if self.exclusive:
            self._ngrams.add(o)
        else:
            self._ngrams.append(o)

    def __len__(self):
        return len(self._ngrams)

    def intersection(self, o):
        if self.exclusive:
            inter_set = self._ngrams.intersection(o._ngrams)
            return Ngrams(inter_set, exclusive=True)
        else:
            other_list = deepcopy(o._ngrams)
            inter_list = []
            for e in self._ngrams:
                try:
                    i = other_list.index(e)
                except ValueError:
                    continue
                other_list.pop(i)
                inter_list.append(e)
            return Ngrams(inter_list, exclusive=False)

    def union(self, o):
        if self.exclusive:
            union_set = self._ngrams.union(o._ngrams)
            return Ngrams(union_set, exclusive=True)
        else:
            union_list = deepcopy(self._ngrams) + deepcopy(o._ngrams)
            return Ngrams(union_list, exclusive=False)


def _get_ngrams(n, text, exclusive=True):
    ngram_set = Ngrams(exclusive=exclusive)
    text_length = len(text)
    max_index_ngram_start = text_length - n
    for i in range(max_index_ngram_start + 1):
        ngram_set.add(tuple(text[i:i + n]))
    return ngram_set


def _split_into_words(sentences):
    return list(itertools.chain(*[_.split(" ") for _ in sentences]))


def _get_word_ngrams(n, sentences, exclusive=True):
    assert len(sentences) > 0
    assert n > 0
    words = _split_into_words(sentences)
    return _get_ngrams(n, words, exclusive=exclusive)


def _lcs(x, y):
    n, m = len(x), len(y)
    table = dict()
    for i in range(n + 1):
        for j in range(m + 1):
            if i == 0 or j == 0:
                table[i, j] = 0
            elif x[i - 1] == y[j - 1]:
                table[i, j] = table[i - 1, j - 1] + 1
            else:
                table[i, j] = max(table[i - 1, j], table[i, j - 1])
    return table


def _recon_lcs(x, y, exclusive=True):
    i, j = len(x), len(y)
    table = _lcs(x, y)

    def _recon(i, j):
        if i == 0 or j == 0:
            return []
        elif x[i - 1] == y[j - 1]:
            return _recon(i - 1, j - 1) + [(x[i - 1], i)]
        elif table[i - 1, j] > table[i, j - 1]:
            return _recon(i - 1, j)
        else:
            return _recon(i, j - 1)

    recon_list = list(map(lambda x: x[0], _recon(i, j)))
    return Ngrams(recon_list, exclusive=exclusive)


def rouge_n(evaluated_sentences, reference_sentences, n=2, raw_results=False, exclusive=True):
    if len(evaluated_sentences) <= 0:
        raise ValueError("Hypothesis is empty.")
    if len(reference_sentences) <= 0:
        raise ValueError("Reference is empty.")
    evaluated_ngrams = _get_word_ngrams(n, evaluated_sentences, exclusive=exclusive)
    reference_ngrams = _get_word_ngrams(n, reference_sentences, exclusive=exclusive)
    reference_count = len(reference_ngrams)
    evaluated_count = len(evaluated_ngrams)
    overlapping_ngrams = evaluated_ngrams.intersection(reference_ngrams)
    overlapping_count = len(overlapping_ngrams)
    return f_r_p_rouge_n(evaluated_count, reference_count, overlapping_count)


def f_r_p_rouge_n(evaluated_count, reference_count, overlapping_count):
    if evaluated_count == 0:
        precision = 0.0
    else:
        precision = overlapping_count / evaluated_count
    if reference_count == 0:
        recall = 0.0
    else:
        recall = overlapping_count / reference_count
    f1_score = 2.0 * ((precision * recall) / (precision + recall + 1e-8))
    return {"f": f1_score, "p": precision, "r": recall}


def _union_lcs(evaluated_sentences, reference_sentence, prev_union=None, exclusive=True):
    if prev_union is None:
        prev_union = Ngrams(exclusive=exclusive)
    if len(evaluated_sentences) <= 0:
        raise ValueError("Collections must contain at least 1 sentence.")
    lcs_union = prev_union
    prev_count = len(prev_union)
    reference_words = _split_into_words([reference_sentence])
    combined_lcs_length = 0
    for eval_s in evaluated_sentences:
        evaluated_words = _split_into_words([eval_s])
        lcs = _recon_lcs(reference_words, evaluated_words, exclusive=exclusive)
        combined_lcs_length += len(lcs)
        lcs_union = lcs_union.union(lcs)
    new_lcs_count = len(lcs_union) - prev_count
    return new_lcs_count, lcs_union


def rouge_l_summary_level(evaluated_sentences, reference_sentences, raw_results=False, exclusive=True, **_):
    if len(evaluated_sentences) <= 0 or len(reference_sentences) <= 0:
        raise ValueError("Collections must contain at least 1 sentence.")
    m = len(Ngrams(_split_into_words(reference_sentences), exclusive=exclusive))
    n = len(Ngrams(_split_into_words(evaluated_sentences), exclusive=exclusive))
    union_lcs_sum_across_all_references = 0
    union = Ngrams(exclusive=exclusive)
    for ref_s in reference_sentences:
        lcs_count, union = _union_lcs(evaluated_sentences, ref_s, prev_union=union, exclusive=exclusive)
        union_lcs_sum_across_all_references += lcs_count
    llcs = union_lcs_sum_across_all_references
    r_lcs = llcs / m
    p_lcs = llcs / n
    f_lcs = 2.0 * ((p_lcs * r_lcs) / (p_lcs + r_lcs + 1e-8))
    return {"f": f_lcs, "p": p_lcs, "r": r_lcs}


# ---- rouge 1.0.1: rouge/rouge.py @ 53a6fc59 (Rouge with its defaults, get_scores avg=True) -------------------


class Rouge:
    DEFAULT_METRICS = ["rouge-1", "rouge-2", "rouge-l"]
    AVAILABLE_METRICS = {
        "rouge-1": lambda hyp, ref, **k: rouge_n(hyp, ref, 1, **k),
        "rouge-2": lambda hyp, ref, **k: rouge_n(hyp, ref, 2, **k),
        "rouge-l": lambda hyp, ref, **k: rouge_l_summary_level(hyp, ref, **k),
    }
    DEFAULT_STATS = ["r", "p", "f"]

    def __init__(self):
        self.exclusive = True
        self.metrics = Rouge.DEFAULT_METRICS
        self.stats = Rouge.DEFAULT_STATS

    def get_scores(self, hyps, refs, avg=False, ignore_empty=False):
        if isinstance(hyps, str):
            hyps, refs = [hyps], [refs]
        assert isinstance(hyps, type(refs))
        assert len(hyps) == len(refs)
        assert avg
        return self._get_avg_scores(hyps, refs)

    def _get_avg_scores(self, hyps, refs):
        scores = {m: {s: 0 for s in self.stats} for m in self.metrics}
        count = 0
        for (hyp, ref) in zip(hyps, refs):
            hyp = [" ".join(_.split()) for _ in hyp.split(".") if len(_) > 0]
            ref = [" ".join(_.split()) for _ in ref.split(".") if len(_) > 0]
            for m in self.metrics:
                fn = Rouge.AVAILABLE_METRICS[m]
                sc = fn(hyp, ref, exclusive=self.exclusive)
                scores[m] = {s: scores[m][s] + sc[s] for s in self.stats}
            count += 1
        avg_scores = {m: {s: scores[m][s] / count for s in self.stats} for m in self.metrics}
        return avg_scores


# ---- LongBench metrics.py @ f6227eb7 (verbatim) -------------------------------------------------------------------


def normalize_answer(s):
    """Lower text and remove punctuation, articles and extra whitespace."""

    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def normalize_zh_answer(s):
    """Lower text and remove punctuation, extra whitespace."""

    def white_space_fix(text):
        return "".join(text.split())

    def remove_punc(text):
        cn_punctuation = "！？｡。＂＃＄％＆＇（）＊＋，－／：；＜＝＞＠［＼］＾＿｀｛｜｝～｟｠｢｣､、〃》「」『』【】〔〕〖〗〘〙〚〛〜〝〞〟〰〾〿–—‘’‛“”„‟…‧﹏."
        all_punctuation = set(string.punctuation + cn_punctuation)
        return "".join(ch for ch in text if ch not in all_punctuation)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_punc(lower(s)))


def count_score(prediction, ground_truth, **kwargs):
    numbers = re.findall(r"\d+", prediction)
    right_num = 0
    for number in numbers:
        if str(number) == str(ground_truth):
            right_num += 1
    final_score = 0.0 if len(numbers) == 0 else right_num / len(numbers)
    return float(final_score)


def retrieval_score(prediction, ground_truth, **kwargs):
    pattern = r'Paragraph (\d+)'
    matches = re.findall(pattern, ground_truth)
    ground_truth_id = matches[0]
    numbers = re.findall(r"\d+", prediction)
    right_num = 0
    for number in numbers:
        if str(number) == str(ground_truth_id):
            right_num += 1
    final_score = 0.0 if len(numbers) == 0 else right_num / len(numbers)
    return float(final_score)


def retrieval_zh_score(prediction, ground_truth, **kwargs):
    pattern = r'段落(\d+)'
    matches = re.findall(pattern, ground_truth)
    ground_truth_id = matches[0]
    numbers = re.findall(r"\d+", prediction)
    right_num = 0
    for number in numbers:
        if str(number) == str(ground_truth_id):
            right_num += 1
    final_score = 0.0 if len(numbers) == 0 else right_num / len(numbers)
    return float(final_score)


def code_sim_score(prediction, ground_truth, **kwargs):
    all_lines = prediction.lstrip('\n').split('\n')
    prediction = ""
    for line in all_lines:
        if ('`' not in line) and ('#' not in line) and ('//' not in line):
            prediction = line
            break
    return (fuzz.ratio(prediction, ground_truth) / 100)


def classification_score(prediction, ground_truth, **kwargs):
    em_match_list = []
    all_classes = kwargs["all_classes"]
    for class_name in all_classes:
        if class_name in prediction:
            em_match_list.append(class_name)
    for match_term in em_match_list:
        if match_term in ground_truth and match_term != ground_truth:
            em_match_list.remove(match_term)
    if em_match_list != 0:
        if ground_truth in em_match_list:
            score = (1.0 / len(em_match_list))
        else:
            score = 0.0
    else:
        best_match = None
        highest_similarity = 0
        for string in all_classes:
            similarity = difflib.SequenceMatcher(None, string, prediction).ratio()
            if similarity > highest_similarity:
                highest_similarity = similarity
                best_match = string
        score = float(best_match == ground_truth)
    return score


def rouge_score(prediction, ground_truth, **kwargs):
    rouge = Rouge()
    try:
        scores = rouge.get_scores([prediction], [ground_truth], avg=True)
    except:
        return 0.0
    return scores["rouge-l"]["f"]


def rouge_zh_score(prediction, ground_truth, **kwargs):
    prediction = " ".join(list(jieba.cut(prediction, cut_all=False)))
    ground_truth = " ".join(list(jieba.cut(ground_truth, cut_all=False)))
    score = rouge_score(prediction, ground_truth)
    return score


def f1_score(prediction, ground_truth, **kwargs):
    common = Counter(prediction) & Counter(ground_truth)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction)
    recall = 1.0 * num_same / len(ground_truth)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def qa_f1_score(prediction, ground_truth, **kwargs):
    normalized_prediction = normalize_answer(prediction)
    normalized_ground_truth = normalize_answer(ground_truth)

    prediction_tokens = normalized_prediction.split()
    ground_truth_tokens = normalized_ground_truth.split()
    return f1_score(prediction_tokens, ground_truth_tokens)


def qa_f1_zh_score(prediction, ground_truth, **kwargs):
    prediction_tokens = list(jieba.cut(prediction, cut_all=False))
    ground_truth_tokens = list(jieba.cut(ground_truth, cut_all=False))
    prediction_tokens = [normalize_zh_answer(token) for token in prediction_tokens]
    ground_truth_tokens = [normalize_zh_answer(token) for token in ground_truth_tokens]
    prediction_tokens = [token for token in prediction_tokens if len(token) > 0]
    ground_truth_tokens = [token for token in ground_truth_tokens if len(token) > 0]
    return f1_score(prediction_tokens, ground_truth_tokens)


# ---- LongBench/eval.py @ 072a5a73 (verbatim) ----------------------------------------------------------------------

dataset2metric = {
    "narrativeqa": qa_f1_score,
    "qasper": qa_f1_score,
    "multifieldqa_en": qa_f1_score,
    "multifieldqa_zh": qa_f1_zh_score,
    "hotpotqa": qa_f1_score,
    "2wikimqa": qa_f1_score,
    "musique": qa_f1_score,
    "dureader": rouge_zh_score,
    "gov_report": rouge_score,
    "qmsum": rouge_score,
    "multi_news": rouge_score,
    "vcsum": rouge_zh_score,
    "trec": classification_score,
    "triviaqa": qa_f1_score,
    "samsum": rouge_score,
    "lsht": classification_score,
    "passage_retrieval_en": retrieval_score,
    "passage_count": count_score,
    "passage_retrieval_zh": retrieval_zh_score,
    "lcc": code_sim_score,
    "repobench-p": code_sim_score,
}


def scorer_e(dataset, predictions, answers, lengths, all_classes):
    scores = {"0-4k": [], "4-8k": [], "8k+": []}
    for (prediction, ground_truths, length) in zip(predictions, answers, lengths):
        score = 0.
        if dataset in ["trec", "triviaqa", "samsum", "lsht"]:
            prediction = prediction.lstrip('\n').split('\n')[0]
        for ground_truth in ground_truths:
            score = max(score, dataset2metric[dataset](prediction, ground_truth, all_classes=all_classes))
        if length < 4000:
            scores["0-4k"].append(score)
        elif length < 8000:
            scores["4-8k"].append(score)
        else:
            scores["8k+"].append(score)
    for key in scores.keys():
        scores[key] = round(100 * np.mean(scores[key]), 2)
    return scores


def scorer(dataset, predictions, answers, all_classes):
    total_score = 0.
    for (prediction, ground_truths) in zip(predictions, answers):
        score = 0.
        if dataset in ["trec", "triviaqa", "samsum", "lsht"]:
            prediction = prediction.lstrip('\n').split('\n')[0]
        for ground_truth in ground_truths:
            score = max(score, dataset2metric[dataset](prediction, ground_truth, all_classes=all_classes))
        total_score += score
    return round(100 * total_score / len(predictions), 2)


# ---- LongBench v2 pred.py @ c5ea10bc and result.py @ 5214a555 ---------------------------------------------------


def extract_answer(response):
    response = response.replace('*', '')
    match = re.search(r'The correct answer is \(([A-D])\)', response)
    if match:
        return match.group(1)
    else:
        match = re.search(r'The correct answer is ([A-D])', response)
        if match:
            return match.group(1)
        else:
            return None


def v2_result(pred_data):
    easy, hard, short, medium, long = 0, 0, 0, 0, 0
    easy_acc, hard_acc, short_acc, medium_acc, long_acc = 0, 0, 0, 0, 0
    for pred in pred_data:
        acc = int(pred['judge'])
        if pred["difficulty"] == "easy":
            easy += 1
            easy_acc += acc
        else:
            hard += 1
            hard_acc += acc
        if pred['length'] == "short":
            short += 1
            short_acc += acc
        elif pred['length'] == "medium":
            medium += 1
            medium_acc += acc
        else:
            long += 1
            long_acc += acc
    # result.py's round(100*x/n, 1) per column; a ZeroDivisionError (empty column) is None here.
    r = lambda a, n: None if n == 0 else round(100 * a / n, 1)
    return {"overall": r(easy_acc + hard_acc, len(pred_data)), "easy": r(easy_acc, easy), "hard": r(hard_acc, hard),
            "short": r(short_acc, short), "medium": r(medium_acc, medium), "long": r(long_acc, long)}


# ---- fixture reading (not LongBench's: its pred.py writes pred/<model>/<dataset>.jsonl) --------------------------


def texts_by_custom_id(path, prompts):
    raw = open(path, encoding="utf-8").read()
    first = json.loads(raw.splitlines()[0]) if raw.lstrip().startswith('{"id"') else None
    if first is not None and "response" in first:  # vllm run-batch output
        out = {}
        for line in raw.splitlines():
            o = json.loads(line)
            out[o["custom_id"]] = o["response"]["body"]["choices"][0]["message"]["content"]
        return out
    o = json.loads(raw)
    if "requests" in o:  # run_vllm_offline.py
        return {r["custom_id"]: r["text"] for r in o["requests"]}
    return {p["custom_id"]: t for p, t in zip(prompts, o["generated_texts"])}  # vllm bench serve, in order


def nan_to_none(x):
    return None if isinstance(x, float) and x != x else x


def main():
    root = sys.argv[1]
    out = {}
    man = json.load(open(os.path.join(root, "workload", "manifest.json"), encoding="utf-8"))
    recs = {}
    for p in man["prompts"]:
        if p["subset"] not in recs:
            with open(os.path.join(root, "data", p["subset"] + ".jsonl"), encoding="utf-8") as f:
                recs[p["subset"]] = [json.loads(l) for l in f]
    for run in ("dense.json", "sparse.jsonl"):
        texts = texts_by_custom_id(os.path.join(root, run), man["prompts"])
        per = {}
        for p in man["prompts"]:
            rec = recs[p["subset"]][p["line"] - 1]
            d = per.setdefault(p["subset"], {"pred": [], "answers": [], "lengths": [], "all_classes": None})
            d["pred"].append(texts[p["custom_id"]])
            d["answers"].append(rec["answers"])
            d["lengths"].append(rec["length"])
            d["all_classes"] = rec["all_classes"]  # eval.py keeps the last line's
        res = {}
        for ds, d in per.items():
            res[ds] = {"score": scorer(ds, d["pred"], d["answers"], d["all_classes"]),
                       "e": {k: nan_to_none(v) for k, v in scorer_e(ds, d["pred"], d["answers"], d["lengths"], d["all_classes"]).items()}}
        out[run] = res
    man2 = json.load(open(os.path.join(root, "workload-v2", "manifest.json"), encoding="utf-8"))
    with open(os.path.join(root, "data-v2", "longbench_v2.jsonl"), encoding="utf-8") as f:
        recs2 = [json.loads(l) for l in f]
    for run in ("v2-dense.json", "v2-sparse.json"):
        texts = texts_by_custom_id(os.path.join(root, run), man2["prompts"])
        pred_data = []
        for p in man2["prompts"]:
            item = dict(recs2[p["line"] - 1])
            output = texts[p["custom_id"]]
            if output == '':  # pred.py: `if output == '': continue` (the record is left out)
                continue
            response = output.strip()
            item["pred"] = extract_answer(response)
            item["judge"] = item["pred"] == item["answer"]
            pred_data.append(item)
        out[run] = {"longbench_v2": v2_result(pred_data), "preds": [x["pred"] for x in pred_data]}
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
