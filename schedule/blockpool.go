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

// free returns a request's blocks in reverse order (KVCacheManager.free:
// tail blocks first), appended at the queue's tail (append_n), or with
// front set inserted before its front in that order (prepend_n), so that
// the request's last block is the next one handed out.
func (p *blockPool) free(blocks []int32, front bool) {
	n := len(p.ring)
	if front {
		// prepend_n(reversed(blocks)): the queue then starts
		// blocks[len-1], ..., blocks[0], old front.
		for _, b := range blocks {
			p.head--
			if p.head < 0 {
				p.head += n
			}
			p.ring[p.head] = b
			p.size++
		}
		return
	}
	for i := len(blocks) - 1; i >= 0; i-- {
		t := p.head + p.size
		if t >= n {
			t -= n
		}
		p.ring[t] = blocks[i]
		p.size++
	}
}
