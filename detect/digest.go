package detect

import "hash/maphash"

// The batch indexes are keyed by a 64-bit digest of the key, not by the
// key: a seqKey or bytesKey is some 70 bytes with a string, and a map of
// them costs that per entry and a string comparison per probe, where a map
// of digests costs 12 bytes and an integer comparison. Every lookup that
// finds a slot confirms it against the remembered batch's own key, so two
// keys sharing a digest (about 2^-64 a pair) cannot be taken for one: the
// second is then not indexed, and a re-send of it goes unmatched.

// findSeq returns the slot of the batch filed under k.
func (d *Detector) findSeq(k seqKey) (int32, bool) {
	slot, ok := d.bySeq[maphash.Comparable(d.seed, k)]
	if ok && d.seqKey(d.slab.at(slot)) != k {
		return 0, false
	}
	return slot, ok
}

// findBytes returns the slot of the batch filed under k.
func (d *Detector) findBytes(k bytesKey) (int32, bool) {
	slot, ok := d.byBytes[maphash.Comparable(d.seed, k)]
	if ok && d.bytesKey(d.slab.at(slot)) != k {
		return 0, false
	}
	return slot, ok
}

// fileSeq files slot under k, unless another key holds its digest.
func (d *Detector) fileSeq(k seqKey, slot int32) {
	h := maphash.Comparable(d.seed, k)
	if _, taken := d.bySeq[h]; !taken {
		d.bySeq[h] = slot
	}
}

// fileBytes files slot under k, unless another key holds its digest.
func (d *Detector) fileBytes(k bytesKey, slot int32) {
	h := maphash.Comparable(d.seed, k)
	if _, taken := d.byBytes[h]; !taken {
		d.byBytes[h] = slot
	}
}

// unfile removes slot from the index m, where h is its key's digest,
// leaving the entry of another batch whose key shares the digest.
func unfile(m map[uint64]int32, h uint64, slot int32) {
	if s, ok := m[h]; ok && s == slot {
		delete(m, h)
	}
}
