package longbench

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by this package wrap one of these (or an
// os/io error) with context naming the file, line, template or subset.
var (
	// ErrMalformed: a JSONL line is not a valid record of the chosen
	// LongBench version. Returned wrapped in a *LineError.
	ErrMalformed = errors.New("malformed record")
	// ErrLineTooLong: a JSONL line exceeds ReadOptions.MaxLineBytes.
	// It also wraps ErrMalformed, so SkipMalformed skips it.
	ErrLineTooLong = fmt.Errorf("%w: line too long", ErrMalformed)
	// ErrMissingSubset: <dir>/<subset>.jsonl does not exist.
	ErrMissingSubset = errors.New("missing subset file")
	// ErrTemplate: a prompt template is not valid Python str.format syntax,
	// uses a feature goldset does not support, or is absent from the config.
	ErrTemplate = errors.New("bad prompt template")
	// ErrUnknownField: a template names a field the record schema lacks
	// (Python would raise KeyError).
	ErrUnknownField = errors.New("unknown template field")
	// ErrConfig: dataset2prompt.json or dataset2maxlen.json is unreadable or
	// lacks an entry for a requested subset.
	ErrConfig = errors.New("bad LongBench config")
	// ErrNotEnough: more prompts were requested than candidates exist.
	ErrNotEnough = errors.New("not enough records")
	// ErrUnreachable: no selection of N candidates has a mean prompt length
	// within the tolerance of the target.
	ErrUnreachable = errors.New("target mean unreachable")
	// ErrOutputExists: the output directory exists and is not empty, and
	// overwriting was not requested.
	ErrOutputExists = errors.New("output directory exists")
	// ErrTokenizer: the tokenizer produced something unusable (for example
	// invalid UTF-8 from Decode, or an id that does not fit in int32).
	ErrTokenizer = errors.New("tokenizer output unusable")
	// ErrOptions: BuildOptions or SelectOptions are inconsistent.
	ErrOptions = errors.New("bad options")
)

// LineError reports a problem with one line of a JSONL file.
type LineError struct {
	Path string // file name as given to the reader
	Line int    // 1-based line number
	Err  error  // wraps ErrMalformed
}

func (e *LineError) Error() string {
	return fmt.Sprintf("longbench: %s:%d: %v", e.Path, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }
