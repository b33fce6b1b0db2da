package npy

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// growthAxisMaxDigits mirrors numpy's GROWTH_AXIS_MAX_DIGITS: numpy.save
// (>= 1.23) leaves room after the dict so that the growth axis (first axis in
// C order, last in Fortran order) can be rewritten in place with up to 21
// digits.
const growthAxisMaxDigits = 21

// EncodeHeader returns the magic, version, header length, dict, padding and
// '\n' exactly as numpy.save writes them for an array described by h:
// format 1.0 unless the padded header needs more than 65535 bytes, then 2.0.
func EncodeHeader(h Header) ([]byte, error) {
	if err := h.check(); err != nil {
		return nil, fmt.Errorf("npy: encode header: %w", err)
	}
	return appendHeader(nil, h), nil
}

// appendHeader appends the encoded header of a validated h to dst.
func appendHeader(dst []byte, h Header) []byte {
	dict := make([]byte, 0, 128+24*len(h.Shape))
	dict = append(dict, "{'descr': '"...)
	dict = append(dict, h.Descr...)
	dict = append(dict, "', 'fortran_order': "...)
	if h.Fortran {
		dict = append(dict, "True"...)
	} else {
		dict = append(dict, "False"...)
	}
	dict = append(dict, ", 'shape': ("...)
	for i, d := range h.Shape {
		if i > 0 {
			dict = append(dict, ", "...)
		}
		dict = strconv.AppendInt(dict, d, 10)
	}
	if len(h.Shape) == 1 {
		dict = append(dict, ',')
	}
	dict = append(dict, "), }"...)
	if len(h.Shape) > 0 {
		growth := h.Shape[0]
		if h.Fortran {
			growth = h.Shape[len(h.Shape)-1]
		}
		for n := growthAxisMaxDigits - len(strconv.FormatInt(growth, 10)); n > 0; n-- {
			dict = append(dict, ' ')
		}
	}

	// numpy: padlen = 64 - (preamble + len(dict) + 1) % 64, which is 64 (not
	// 0) when already aligned; the '\n' ends the padding.
	pre := PreambleLen1
	hlen := len(dict) + 1
	pad := Align - (pre+hlen)%Align
	if hlen+pad > math.MaxUint16 {
		pre = PreambleLen2
		pad = Align - (pre+hlen)%Align
	}
	dst = append(dst, "\x93NUMPY"...)
	if pre == PreambleLen1 {
		dst = append(dst, 1, 0)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(hlen+pad))
	} else {
		dst = append(dst, 2, 0)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(hlen+pad))
	}
	dst = append(dst, dict...)
	for ; pad > 0; pad-- {
		dst = append(dst, ' ')
	}
	return append(dst, '\n')
}

// parseDict parses the python-literal header dict of a file with the given
// major version. It returns the header exactly as written (not yet
// validated); errors wrap ErrFormat or, for a structured dtype,
// ErrUnsupportedDType.
func parseDict(s []byte, major byte) (Header, string, error) {
	p := dictParser{s: s, allowLong: major < 3}
	var h Header
	var descr string
	var seen [3]bool
	p.skipSpace()
	if !p.eat('{') {
		return h, "", p.errorf("header does not start with '{'")
	}
	for {
		p.skipSpace()
		if p.eat('}') {
			break
		}
		keyAt := p.i
		key, err := p.str()
		if err != nil {
			return h, "", err
		}
		p.skipSpace()
		if !p.eat(':') {
			return h, "", p.errorf("expected ':' after key %q", key)
		}
		p.skipSpace()
		var k int
		switch key {
		case "descr":
			k = 0
			if p.peek() == '[' {
				return h, "", fmt.Errorf("%w: structured dtypes (descr is a list)", ErrUnsupportedDType)
			}
			descr, err = p.str()
		case "fortran_order":
			k = 1
			h.Fortran, err = p.boolean()
		case "shape":
			k = 2
			h.Shape, err = p.tuple()
		default:
			p.i = keyAt
			return h, "", p.errorf("unexpected key %q", key)
		}
		if err != nil {
			return h, "", err
		}
		if seen[k] {
			p.i = keyAt
			return h, "", p.errorf("duplicate key %q", key)
		}
		seen[k] = true
		p.skipSpace()
		if p.eat(',') {
			continue
		}
		p.skipSpace()
		if !p.eat('}') {
			return h, "", p.errorf("expected ',' or '}' in dict")
		}
		break
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return h, "", p.errorf("unexpected bytes after the dict")
	}
	for k, name := range [3]string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, "", fmt.Errorf("%w: key %q missing", ErrFormat, name)
		}
	}
	return h, descr, nil
}

// dictParser is a strict recursive-descent parser for the subset of python
// literals a .npy header holds.
type dictParser struct {
	s         []byte
	i         int
	allowLong bool // accept Python 2 "3L" ints (numpy filters them for v1/v2)
}

func (p *dictParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: header dict at byte %d: %s", ErrFormat, p.i, fmt.Sprintf(format, args...))
}

func (p *dictParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *dictParser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// skipSpace skips python whitespace; inside brackets newlines are allowed too.
func (p *dictParser) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r', '\f':
			p.i++
		default:
			return
		}
	}
}

// str parses a '...' or "..." literal of printable ASCII without escapes.
func (p *dictParser) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", p.errorf("expected a string")
	}
	start := p.i + 1
	for j := start; j < len(p.s); j++ {
		c := p.s[j]
		switch {
		case c == q:
			p.i = j + 1
			return string(p.s[start:j]), nil
		case c == '\\' || c < 0x20 || c > 0x7e:
			p.i = j
			return "", p.errorf("unsupported character %q in string", c)
		}
	}
	return "", p.errorf("unterminated string")
}

func isIdent(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func (p *dictParser) boolean() (bool, error) {
	for _, w := range [2]string{"True", "False"} {
		end := p.i + len(w)
		if end <= len(p.s) && string(p.s[p.i:end]) == w && (end == len(p.s) || !isIdent(p.s[end])) {
			p.i = end
			return w == "True", nil
		}
	}
	return false, p.errorf("fortran_order is not True or False")
}

// tuple parses "()", "(n,)" and "(n, m, ...)" with an optional trailing
// comma. "(n)" is a parenthesised int in python, not a tuple, and is rejected.
func (p *dictParser) tuple() ([]int64, error) {
	if !p.eat('(') {
		return nil, p.errorf("shape is not a tuple")
	}
	shape := []int64{}
	p.skipSpace()
	if p.eat(')') {
		return shape, nil
	}
	for {
		p.skipSpace()
		d, err := p.integer()
		if err != nil {
			return nil, err
		}
		shape = append(shape, d)
		p.skipSpace()
		if p.eat(',') {
			p.skipSpace()
			if p.eat(')') {
				return shape, nil
			}
			continue
		}
		if p.eat(')') {
			if len(shape) == 1 {
				return nil, p.errorf("shape (n) is an int, not a tuple; write (n,)")
			}
			return shape, nil
		}
		return nil, p.errorf("expected ',' or ')' in shape")
	}
}

// integer parses a python int literal: "-"? decimal digits, no leading zeros,
// no underscores. Negative values are returned (and rejected later with
// ErrShape); values past int64 are a format error.
func (p *dictParser) integer() (int64, error) {
	start := p.i
	neg := p.eat('-')
	if neg {
		p.skipSpace()
	}
	digits := p.i
	var v uint64
	for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		if v > (math.MaxInt64+1)/10 {
			p.i = start
			return 0, p.errorf("dimension out of int64 range")
		}
		v = v*10 + uint64(p.s[p.i]-'0')
		p.i++
	}
	switch {
	case p.i == digits:
		return 0, p.errorf("expected a dimension")
	case p.s[digits] == '0' && p.i-digits > 1:
		p.i = digits
		return 0, p.errorf("dimension with leading zeros")
	case v > math.MaxInt64 && !(neg && v == math.MaxInt64+1):
		p.i = start
		return 0, p.errorf("dimension out of int64 range")
	}
	if p.allowLong && p.peek() == 'L' {
		p.i++
	}
	if p.i < len(p.s) && isIdent(p.s[p.i]) {
		return 0, p.errorf("bad character %q after dimension", p.s[p.i])
	}
	if neg {
		return int64(-v), nil
	}
	return int64(v), nil
}
