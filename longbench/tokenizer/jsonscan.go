package tokenizer

import (
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A minimal, validating JSON scanner for the two large sections of
// tokenizer.json: it reads the vocab and merges straight into their final
// form and hands only the small components to encoding/json. On Qwen3's
// 11 MB file (151643 vocab entries, 151387 merges) encoding/json's fastest
// form (one typed Unmarshal) takes 1.35-1.5x this scanner's CPU time
// (426-474 vs 316 cpu-ms on a loaded 2-vCPU VM) and allocates 2.6x the
// bytes (79 vs 31 MB): BenchmarkVocabMergesScanner/EncodingJSON, and
// TestScannerAgreesWithEncodingJSON checks both read the same maps.

var errJSON = errors.New("invalid JSON")

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 512

type jsonErr struct {
	off int
	msg string
}

func (e *jsonErr) Error() string { return "offset " + strconv.Itoa(e.off) + ": " + e.msg }
func (e *jsonErr) Unwrap() error { return errJSON }

func jerr(off int, msg string) error { return &jsonErr{off, msg} }

func skipWS(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\n' || d[i] == '\r' || d[i] == '\t') {
		i++
	}
	return i
}

// skipValue validates the value at d[i:] (after whitespace) and returns its end.
func skipValue(d []byte, i, depth int) (int, error) {
	i = skipWS(d, i)
	if i >= len(d) {
		return i, jerr(i, "unexpected end of input")
	}
	switch c := d[i]; {
	case c == '"':
		return skipString(d, i)
	case c == '{':
		if depth >= maxDepth {
			return i, jerr(i, "nesting too deep")
		}
		return scanObject(d, i, func(_ string, v int) (int, error) { return skipValue(d, v, depth+1) })
	case c == '[':
		if depth >= maxDepth {
			return i, jerr(i, "nesting too deep")
		}
		return scanArray(d, i, func(v int) (int, error) { return skipValue(d, v, depth+1) })
	case c == '-' || (c >= '0' && c <= '9'):
		return scanNumber(d, i)
	case c == 't':
		return scanLiteral(d, i, "true")
	case c == 'f':
		return scanLiteral(d, i, "false")
	case c == 'n':
		return scanLiteral(d, i, "null")
	}
	return i, jerr(i, "unexpected character")
}

func scanLiteral(d []byte, i int, lit string) (int, error) {
	if len(d)-i < len(lit) || string(d[i:i+len(lit)]) != lit {
		return i, jerr(i, "invalid literal")
	}
	return i + len(lit), nil
}

func scanNumber(d []byte, i int) (int, error) {
	start := i
	if d[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(d) && d[i] == '0' {
		i++
	} else if digits() == 0 {
		return start, jerr(start, "invalid number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			return start, jerr(start, "invalid number")
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			return start, jerr(start, "invalid number")
		}
	}
	return i, nil
}

// scanInt reads a JSON number that must be an integer.
func scanInt(d []byte, i int) (int, int, error) {
	i = skipWS(d, i)
	if i >= len(d) {
		return 0, i, jerr(i, "unexpected end of input")
	}
	end, err := scanNumber(d, i)
	if err != nil {
		return 0, end, err
	}
	n, perr := strconv.Atoi(string(d[i:end]))
	if perr != nil {
		return 0, end, jerr(i, "not an integer")
	}
	return n, end, nil
}

// scanString decodes the string starting at d[i] == '"'. Invalid UTF-8 and
// lone surrogate escapes become U+FFFD, as with encoding/json.
func scanString(d []byte, i int) (string, int, error) {
	if i >= len(d) || d[i] != '"' {
		return "", i, jerr(i, "expected string")
	}
	j := i + 1
	for j < len(d) && d[j] != '"' && d[j] != '\\' && d[j] >= 0x20 && d[j] < utf8.RuneSelf {
		j++
	}
	if j < len(d) && d[j] == '"' {
		return string(d[i+1 : j]), j + 1, nil
	}
	buf := make([]byte, 0, j-i+16)
	buf = append(buf, d[i+1:j]...)
	for j < len(d) {
		c := d[j]
		switch {
		case c == '"':
			return string(buf), j + 1, nil
		case c < 0x20:
			return "", j, jerr(j, "control character in string")
		case c == '\\':
			if j+1 >= len(d) {
				return "", j, jerr(j, "unexpected end of input")
			}
			e := d[j+1]
			j += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(d, j)
				if !ok {
					return "", j, jerr(j, "invalid \\u escape")
				}
				j += 4
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if j+6 <= len(d) && d[j] == '\\' && d[j+1] == 'u' {
						if x, ok := hex4(d, j+2); ok {
							r2 = x
						}
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
						j += 6
					} else {
						r = utf8.RuneError
					}
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return "", j, jerr(j-2, "invalid escape")
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			j++
		default:
			r, size := utf8.DecodeRune(d[j:])
			if r == utf8.RuneError && size == 1 {
				buf = append(buf, "\uFFFD"...)
			} else {
				buf = append(buf, d[j:j+size]...)
			}
			j += size
		}
	}
	return "", j, jerr(j, "unterminated string")
}

// skipString validates the string at d[i] == '"' without decoding it.
func skipString(d []byte, i int) (int, error) {
	for j := i + 1; j < len(d); {
		switch c := d[j]; {
		case c == '"':
			return j + 1, nil
		case c < 0x20:
			return j, jerr(j, "control character in string")
		case c == '\\':
			if j+1 >= len(d) {
				return j, jerr(j, "unexpected end of input")
			}
			switch d[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if _, ok := hex4(d, j+2); !ok {
					return j, jerr(j, "invalid \\u escape")
				}
				j += 6
			default:
				return j, jerr(j, "invalid escape")
			}
		default:
			j++
		}
	}
	return len(d), jerr(len(d), "unterminated string")
}

func hex4(d []byte, j int) (rune, bool) {
	if j+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[j : j+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// scanObject walks the object at d[i] == '{'; fn gets each key and the offset
// of its value and returns the value's end.
func scanObject(d []byte, i int, fn func(key string, val int) (int, error)) (int, error) {
	if i >= len(d) || d[i] != '{' {
		return i, jerr(i, "expected object")
	}
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == '}' {
		return i + 1, nil
	}
	for {
		key, end, err := scanString(d, skipWS(d, i))
		if err != nil {
			return end, err
		}
		i = skipWS(d, end)
		if i >= len(d) || d[i] != ':' {
			return i, jerr(i, "expected ':'")
		}
		if i, err = fn(key, i+1); err != nil {
			return i, err
		}
		i = skipWS(d, i)
		if i >= len(d) {
			return i, jerr(i, "unexpected end of input")
		}
		switch d[i] {
		case ',':
			i++
		case '}':
			return i + 1, nil
		default:
			return i, jerr(i, "expected ',' or '}'")
		}
	}
}

// scanArray walks the array at d[i] == '['; fn gets each element's offset and
// returns its end.
func scanArray(d []byte, i int, fn func(val int) (int, error)) (int, error) {
	if i >= len(d) || d[i] != '[' {
		return i, jerr(i, "expected array")
	}
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = fn(skipWS(d, i)); err != nil {
			return i, err
		}
		i = skipWS(d, i)
		if i >= len(d) {
			return i, jerr(i, "unexpected end of input")
		}
		switch d[i] {
		case ',':
			i++
		case ']':
			return i + 1, nil
		default:
			return i, jerr(i, "expected ',' or ']'")
		}
	}
}

// rawFields splits the object at d[i:] into key -> raw value (later keys
// win, as with encoding/json) and returns its end.
func rawFields(d []byte, i int) (map[string][]byte, int, error) {
	i = skipWS(d, i)
	out := map[string][]byte{}
	end, err := scanObject(d, i, func(key string, v int) (int, error) {
		v = skipWS(d, v)
		e, err := skipValue(d, v, 1)
		if err == nil {
			out[key] = d[v:e]
		}
		return e, err
	})
	return out, end, err
}
