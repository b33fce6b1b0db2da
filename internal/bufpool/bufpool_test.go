package bufpool

import "testing"

func TestPoolReusesUpToMax(t *testing.T) {
	made := 0
	p := New(2, func() []byte { made++; return make([]byte, 8) })
	a, b, c := p.Get(), p.Get(), p.Get()
	if made != 3 {
		t.Fatalf("made %d buffers for 3 gets from an empty pool", made)
	}
	if !p.Put(a) || !p.Put(b) || p.Put(c) {
		t.Fatal("a pool of max 2 must keep the first two buffers and refuse the third")
	}
	if p.Len() != 2 {
		t.Fatalf("Len = %d, want 2", p.Len())
	}
	x, y := p.Get(), p.Get()
	if made != 3 || &x[0] != &b[0] || &y[0] != &a[0] {
		t.Fatalf("gets after puts must return the kept buffers (made %d)", made)
	}
	p.Get()
	if made != 4 {
		t.Fatalf("an emptied pool must allocate again (made %d)", made)
	}
}
