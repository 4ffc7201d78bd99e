package fake

import (
	"hash/maphash"
	"strings"
)

// lineTexts is a node's dictionary of the log lines its containers print alike: nginx's
// entrypoint prints the same eight lines in every one of 10,000 pods, and "container c0
// started" repeats in every pod with a c0. A log keeps such a line as a reference into
// the dictionary (a few bytes), not its text. A text is taken in at its second sighting,
// so that lines printed once (a timestamp, a request) never enter it; what it holds is
// bounded (lineTextsMax texts of at most lineTextMaxBytes), as a hostile container that
// prints a new line every instant cannot grow it past that. Used under the runtime's lock.
type lineTexts struct {
	ids   map[string]uint32
	texts []string
	// seen holds the hashes of texts seen once, in the set of lineSeenWays slots a text's
	// hash picks, the newest first: a text whose hash is there already is seen twice. A
	// set holds the last four texts that fell in it, so texts printed in turn (a banner's
	// lines, container after container) are each found at their second sighting, unless
	// more than four of them share a set; a collision only delays a text, it costs no
	// correctness. (One slot a text evicted its neighbour for good when two lines of a
	// banner shared it: printed in turn, neither was ever taken in.)
	seen [lineSeenSets * lineSeenWays]uint64
	seed maphash.Seed
}

const (
	lineTextsMax     = 1 << 14
	lineTextMaxBytes = 256
	// lineTextMinBytes: a shorter text costs no more than a reference to it.
	lineTextMinBytes = 8
	lineSeenSets     = 16
	lineSeenWays     = 4
)

// id is text's number in the dictionary, taking it in at its second sighting; false
// when the log keeps the text itself. A nil dictionary takes in nothing.
func (d *lineTexts) id(text string) (uint32, bool) {
	if d == nil || len(text) < lineTextMinBytes || len(text) > lineTextMaxBytes {
		return 0, false
	}
	if id, ok := d.ids[text]; ok {
		return id, true
	}
	if len(d.texts) >= lineTextsMax {
		return 0, false
	}
	if d.ids == nil {
		d.ids = map[string]uint32{}
		d.seed = maphash.MakeSeed()
	}
	h := maphash.String(d.seed, text)
	i := int(h%lineSeenSets) * lineSeenWays
	set := d.seen[i : i+lineSeenWays]
	found := false
	for _, s := range set {
		if s == h {
			found = true
			break
		}
	}
	if !found {
		copy(set[1:], set[:lineSeenWays-1])
		set[0] = h
		return 0, false
	}
	id := uint32(len(d.texts))
	text = strings.Clone(text) // not the rest of a buffer it may be a slice of
	d.texts = append(d.texts, text)
	d.ids[text] = id
	return id, true
}

// text is the text numbered id.
func (d *lineTexts) text(id uint64) string { return d.texts[id] }
