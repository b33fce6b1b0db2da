package longbench

import "errors"

// ErrBudget: a truncation budget, chat template and output length cannot fit
// the model's context (prompt_tokens + max_new_tokens > context_len), or a
// length set cannot be filled from the records.
var ErrBudget = errors.New("prompt does not fit the context")
