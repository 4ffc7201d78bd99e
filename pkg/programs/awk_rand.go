package programs

// glibcRandom is glibc's random(3) (its default TYPE_3 additive generator), which
// busybox's awk draws rand() from: the same seed gives the same numbers.
type glibcRandom struct {
	f, b int // front and rear indices into the 31-word state
	st   [31]int32
}

func (g *glibcRandom) seed(seed uint32) {
	if seed == 0 {
		seed = 1
	}
	g.st[0] = int32(seed)
	word := int64(seed)
	for i := 1; i < 31; i++ {
		hi := word / 127773
		lo := word % 127773
		word = 16807*lo - 2836*hi
		if word < 0 {
			word += 2147483647
		}
		g.st[i] = int32(word)
	}
	g.f, g.b = 3, 0
	for i := 0; i < 310; i++ {
		g.next()
	}
}

// next is random()'s next number, 0 to 2^31-1.
func (g *glibcRandom) next() int32 {
	g.st[g.f] = int32(uint32(g.st[g.f]) + uint32(g.st[g.b]))
	v := int32(uint32(g.st[g.f]) >> 1)
	g.f++
	if g.f >= 31 {
		g.f = 0
	}
	g.b++
	if g.b >= 31 {
		g.b = 0
	}
	return v
}

// float is busybox's rand(): 63 random bits of three draws, scaled to [0, 1).
func (g *glibcRandom) float() float64 {
	r1 := uint32(g.next())
	r2 := uint32(g.next())
	u := r1<<16 ^ r2
	v := uint64(uint32(g.next()))<<32 | uint64(u)
	return float64(v) / 0x8000000000000000
}
