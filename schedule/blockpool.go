package schedule

// blockPool is vLLM's BlockPool with prefix caching off: a free-block queue
// (FreeKVCacheBlockQueue) that starts as block ids 0..n-1 in order, hands
// out blocks from its front, and takes freed blocks at its tail. Block 0 is
// popped at construction as the null block and never returned.
//
// With prefix caching off no block is ever taken from the middle of the
// queue, so a ring buffer of ids is exact.
type blockPool struct {
	ring       []int32
	head, size int
}

func (p *blockPool) init(n int) {
	p.ring = make([]int32, n)
	for i := range p.ring {
		p.ring[i] = int32(i)
	}
	p.head, p.size = 1, n-1 // block 0: the null block
}

func (p *blockPool) numFree() int { return p.size }

// popFront appends the n front blocks to dst (popleft_n); n <= numFree.
func (p *blockPool) popFront(dst []int32, n int) []int32 {
	for range n {
		dst = append(dst, p.ring[p.head])
		p.head++
		if p.head == len(p.ring) {
			p.head = 0
		}
	}
	p.size -= n
	return dst
}

// freeReversed appends blocks to the tail in reverse order, as
// KVCacheManager.free does (tail blocks first, so that with prefix caching
// they would be evicted first).
func (p *blockPool) freeReversed(blocks []int32) {
	for i := len(blocks) - 1; i >= 0; i-- {
		t := p.head + p.size
		if t >= len(p.ring) {
			t -= len(p.ring)
		}
		p.ring[t] = blocks[i]
		p.size++
	}
}
