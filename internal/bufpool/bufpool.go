package bufpool

import "sync"

// Pool holds up to max buffers made by alloc.
type Pool struct {
	mu    sync.Mutex
	free  [][]byte
	max   int
	alloc func() []byte
}

// New returns a pool keeping at most max buffers; alloc makes a buffer
// when none is free.
func New(max int, alloc func() []byte) *Pool { return &Pool{max: max, alloc: alloc} }

// Get returns a kept buffer, or a new one.
func (p *Pool) Get() []byte {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return b
	}
	p.mu.Unlock()
	return p.alloc()
}

// Put keeps b for a later Get unless max buffers are kept already; it
// reports whether b was kept. The caller must not use b afterwards.
func (p *Pool) Put(b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) >= p.max {
		return false
	}
	p.free = append(p.free, b)
	return true
}

// Len reports how many buffers are kept.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}
