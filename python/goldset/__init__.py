"""goldset for kernel authors: load a goldset bundle's inputs in numpy or
torch, save kernel outputs in the encoding `goldset compare` accepts, and
judge a kernel on every case.

    import goldset
    b = goldset.open_bundle("out/stage2-paged")
    c = b.case("pa-edge-g4-bf16")
    x = c.inputs(backend="torch", device="cuda")     # query, key_cache, ... (bf16 as torch.bfloat16)
    res = goldset.judge(b, my_kernel, ops=["paged_attention"], backend="torch", device="cuda")

my_kernel(case, inputs) returns {output name: array or tensor}, e.g.
{"out": ..., "lse": ...}; case.params holds the op's parameters.
"""
from ._bundle import (Bundle, BundleError, Case, TensorSpec, VerifyError, encode_candidate, open_bundle,
                      save_output, verify_file)
from ._dtypes import UnsupportedDType, bf16_to_float32, float32_to_bf16
from ._judge import (CaseResult, GoldsetBinaryError, JudgeResult, check_goldset, compare_case, find_goldset,
                     format_table, goldset_version, judge, select_cases)
from ._variants import check_rows, check_variant, judge_variants

__version__ = "0.1.0"

__all__ = [
    "check_rows", "check_variant", "judge_variants",
    "Bundle", "BundleError", "Case", "CaseResult", "GoldsetBinaryError", "JudgeResult", "TensorSpec",
    "UnsupportedDType", "VerifyError", "bf16_to_float32", "check_goldset", "compare_case", "encode_candidate",
    "find_goldset", "float32_to_bf16", "format_table", "goldset_version", "judge", "open_bundle", "save_output",
    "select_cases", "verify_file",
]
