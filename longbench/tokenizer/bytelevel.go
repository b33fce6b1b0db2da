package tokenizer

import "unicode/utf8"

// byteToRune is GPT-2's bytes_to_unicode table: printable Latin-1 bytes map to
// themselves, the other 68 bytes to U+0100.. in byte order, so every byte has a
// visible, non-whitespace stand-in character in vocab strings.
var byteToRune [256]rune

// runeToByte inverts byteToRune; runes outside it are absent (ok == false).
var runeToByte = map[rune]byte{}

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// appendByteLevelDecode appends a vocab string mapped back to raw bytes. Like
// HF's ByteLevel decoder, a token with any character outside the table is
// kept as its own UTF-8 bytes.
func appendByteLevelDecode(dst []byte, tok string) []byte {
	n := len(dst)
	for _, r := range tok {
		b, ok := runeToByte[r]
		if !ok {
			return append(dst[:n], tok...)
		}
		dst = append(dst, b)
	}
	return dst
}

// byteLevelEncode maps raw bytes to their vocab-string form.
func byteLevelEncode(b []byte) string {
	out := make([]rune, len(b))
	for i, c := range b {
		out[i] = byteToRune[c]
	}
	return string(out)
}

// appendLossyUTF8 appends b to dst as valid UTF-8, replacing each maximal
// invalid subpart with U+FFFD. This is the Unicode "best practice" that
// Rust's String::from_utf8_lossy, Python's errors="replace" and the WHATWG
// TextDecoder all follow (Go's strings.ToValidUTF8 merges runs instead).
func appendLossyUTF8(dst []byte, b []byte) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			dst = append(dst, b[i:i+size]...)
			i += size
			continue
		}
		dst = append(dst, "\uFFFD"...)
		i += maximalSubpart(b[i:])
	}
	return dst
}

// maximalSubpart returns how many bytes at the start of b (which does not
// begin with a valid sequence) form the longest prefix of some well-formed
// UTF-8 sequence; at least 1.
func maximalSubpart(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		x := b[n]
		if k == 0 {
			if x < lo || x > hi {
				break
			}
		} else if x < 0x80 || x > 0xBF {
			break
		}
		n++
	}
	return n
}
