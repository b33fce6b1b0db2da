package tokenizer

import (
	"container/heap"
	"hash/maphash"
	"strings"
	"sync"
)

// bpeModel applies byte-level BPE merges to one pre-token.
type bpeModel struct {
	// byteID[b] is the vocab id of byte b's stand-in character, -1 if the
	// vocab lacks it (then unkID, or nothing, is used as HF does).
	byteID [256]int32
	// merges maps pair (left<<32 | right) to (rank<<32 | merged id).
	merges       map[uint64]uint64
	ignoreMerges bool
	vocab        map[string]int // only consulted when ignoreMerges
	unkID        int32          // -1: no unk token
	fuseUnk      bool

	cache wordCache
}

// wordCache maps a word to its ids. It is sharded by hash so concurrent
// Encode calls rarely share a lock, and a full shard is simply emptied,
// which bounds memory without eviction bookkeeping on the hot path.
type wordCache struct {
	seed   maphash.Seed
	shards [cacheShards]struct {
		mu sync.RWMutex
		m  map[string][]int32 // values are never modified once stored
		_  [40]byte           // keep shards on separate cache lines
	}
}

const cacheShards = 32

func (c *wordCache) shard(w string) int {
	return int(maphash.String(c.seed, w) % cacheShards)
}

func (c *wordCache) get(w string) ([]int32, bool) {
	sh := &c.shards[c.shard(w)]
	sh.mu.RLock()
	v, ok := sh.m[w]
	sh.mu.RUnlock()
	return v, ok
}

func (c *wordCache) put(w string, ids []int32) {
	sh := &c.shards[c.shard(w)]
	sh.mu.Lock()
	if sh.m == nil || len(sh.m) >= cacheCap/cacheShards {
		sh.m = make(map[string][]int32, 256)
	}
	// Clone: w is a slice of the caller's text, which must not be pinned.
	sh.m[strings.Clone(w)] = ids
	sh.mu.Unlock()
}

func (c *wordCache) clear() {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		sh.m = nil
		sh.mu.Unlock()
	}
}

const (
	// cacheCap bounds the number of cached words.
	cacheCap = 1 << 16
	// cacheMaxWord: longer words are rare and would pin large keys.
	cacheMaxWord = 256
	// heapThreshold: words with more symbols use the O(n log n) heap merge;
	// shorter ones the quadratic scan, which is faster for them.
	heapThreshold = 48
)

// appendWord appends the ids of word (raw bytes, before the byte-level map).
func (m *bpeModel) appendWord(dst []int, word string) []int {
	if len(word) <= cacheMaxWord {
		if v, ok := m.cache.get(word); ok {
			for _, id := range v {
				dst = append(dst, int(id))
			}
			return dst
		}
	}
	ids := m.encodeWord(word)
	if len(word) <= cacheMaxWord {
		m.cache.put(word, ids)
	}
	for _, id := range ids {
		dst = append(dst, int(id))
	}
	return dst
}

// encodeWord runs BPE on one word without the cache.
func (m *bpeModel) encodeWord(word string) []int32 {
	if m.ignoreMerges {
		if id, ok := m.vocab[byteLevelEncode([]byte(word))]; ok {
			return []int32{int32(id)}
		}
	}
	syms := m.initialSymbols(word)
	if len(syms) > heapThreshold {
		return m.mergeHeap(syms)
	}
	return m.mergeScan(syms)
}

// initialSymbols maps each byte to its id; bytes missing from the vocab
// become unk (fused when fuse_unk) or are dropped when there is no unk token,
// mirroring HF's BPE::merge_word.
func (m *bpeModel) initialSymbols(word string) []int32 {
	syms := make([]int32, 0, len(word))
	pendingUnk := false
	for i := 0; i < len(word); i++ {
		id := m.byteID[word[i]]
		if id >= 0 {
			if pendingUnk {
				syms = append(syms, m.unkID)
				pendingUnk = false
			}
			syms = append(syms, id)
			continue
		}
		if m.unkID < 0 {
			continue
		}
		if pendingUnk && !m.fuseUnk {
			syms = append(syms, m.unkID)
		}
		pendingUnk = true
	}
	if pendingUnk {
		syms = append(syms, m.unkID)
	}
	return syms
}

func (m *bpeModel) lookup(a, b int32) (rank uint32, id int32, ok bool) {
	v, ok := m.merges[uint64(uint32(a))<<32|uint64(uint32(b))]
	return uint32(v >> 32), int32(uint32(v)), ok
}

// mergeScan repeatedly merges the lowest-ranked adjacent pair, leftmost
// first among equal ranks (the same pair at several places).
func (m *bpeModel) mergeScan(syms []int32) []int32 {
	for len(syms) > 1 {
		best, bestRank, bestID := -1, uint32(0), int32(0)
		for i := 0; i+1 < len(syms); i++ {
			if r, id, ok := m.lookup(syms[i], syms[i+1]); ok && (best < 0 || r < bestRank) {
				best, bestRank, bestID = i, r, id
			}
		}
		if best < 0 {
			break
		}
		syms[best] = bestID
		syms = append(syms[:best+1], syms[best+2:]...)
	}
	return syms
}

type mergeCand struct {
	rank uint32
	pos  int32
	id   int32
}

type mergeHeap []mergeCand

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(mergeCand)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergeHeap is HF's Word::merge_all: a priority queue of (rank, position)
// over a linked list of symbols, skipping entries made stale by earlier
// merges. It yields the same result as mergeScan in O(n log n).
func (m *bpeModel) mergeHeap(syms []int32) []int32 {
	n := len(syms)
	next := make([]int32, n)
	prev := make([]int32, n)
	alive := make([]bool, n)
	h := make(mergeHeap, 0, n)
	for i := range syms {
		prev[i], next[i], alive[i] = int32(i-1), int32(i+1), true
		if i+1 < n {
			if r, id, ok := m.lookup(syms[i], syms[i+1]); ok {
				h = append(h, mergeCand{r, int32(i), id})
			}
		}
	}
	next[n-1] = -1
	heap.Init(&h)
	for h.Len() > 0 {
		c := heap.Pop(&h).(mergeCand)
		p := c.pos
		if !alive[p] || next[p] < 0 {
			continue
		}
		q := next[p]
		if _, id, ok := m.lookup(syms[p], syms[q]); !ok || id != c.id {
			continue // stale: a neighbour changed since this entry was pushed
		}
		syms[p] = c.id
		alive[q] = false
		next[p] = next[q]
		if next[p] >= 0 {
			prev[next[p]] = p
		}
		if l := prev[p]; l >= 0 {
			if r, id, ok := m.lookup(syms[l], syms[p]); ok {
				heap.Push(&h, mergeCand{r, l, id})
			}
		}
		if nx := next[p]; nx >= 0 {
			if r, id, ok := m.lookup(syms[p], syms[nx]); ok {
				heap.Push(&h, mergeCand{r, p, id})
			}
		}
	}
	out := syms[:0]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, syms[i])
	}
	return out
}
