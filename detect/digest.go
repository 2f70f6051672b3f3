package detect

import "hash/maphash"

// The batch indexes are keyed by a 64-bit digest of the key, not by the
// key: a seqKey or bytesKey is some 70 bytes with a string, and a map of
// them costs that per entry and a string comparison per probe, where a map
// of digests costs 12 bytes and an integer comparison. Every lookup that
// finds a slot confirms it against the remembered batch's own key, so two
// keys sharing a digest (about 2^-64 a pair) cannot be taken for one: the
// second is then not indexed, and a re-send of it goes unmatched.

// findSeq returns the slot of the batch filed under k, and k's digest.
// Not found, the slot is taken when another key holds the digest (the new
// batch is then not filed), else free.
func (d *Detector) findSeq(k seqKey) (int32, bool, uint64) {
	h := maphash.Comparable(d.seed, k)
	slot, ok := d.bySeq[h]
	switch {
	case !ok:
		return free, false, h
	case d.seqKey(d.slab.at(slot)) != k:
		return taken, false, h
	}
	return slot, true, h
}

// findBytes is findSeq for the index of batches by bytes.
func (d *Detector) findBytes(k bytesKey) (int32, bool, uint64) {
	h := maphash.Comparable(d.seed, k)
	slot, ok := d.byBytes[h]
	switch {
	case !ok:
		return free, false, h
	case d.bytesKey(d.slab.at(slot)) != k:
		return taken, false, h
	}
	return slot, true, h
}

// The slot a find returns when it found no batch of its key: the digest
// is free to file the new batch under, or taken by another key.
const (
	free  int32 = -1
	taken int32 = -2
)

// unfile removes slot from the index m, where h is its key's digest,
// leaving the entry of another batch whose key shares the digest.
func unfile(m map[uint64]int32, h uint64, slot int32) {
	if s, ok := m[h]; ok && s == slot {
		delete(m, h)
	}
}
