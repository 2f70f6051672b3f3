package detect

import (
	"hash/maphash"
	"testing"
)

// TestDigestCollision: a batch whose key's digest is held by another
// batch's slot is never taken for that batch, nor indexed over it, and
// forgetting it leaves the other's entry.
func TestDigestCollision(t *testing.T) {
	d := New(Options{})
	d.Produce(ex(conn1, 1, 0, 10, 0, 0, plain(0xa)))
	first, ok := d.findBytes(d.bytesKey(d.slab.at(0)))
	if !ok {
		t.Fatal("first batch not indexed")
	}
	// Make the second batch's digest collide with the first's slot.
	second := plain(0xb)
	k := bytesKey{owner: d.ownerOf(conn1, &rdkafka, false), topic: "test", partition: 0, crc: second.CRC, hash: second.Hash}
	h := maphash.Comparable(d.seed, k)
	d.byBytes[h] = first
	d.Produce(ex(conn1, 2, 100, 110, 0, 1, second))
	if s := d.Stats(); s.Resends != 0 {
		t.Fatalf("the colliding batch was taken for a re-send of the first: %+v", s)
	}
	if got := d.byBytes[h]; got != first {
		t.Fatalf("the colliding batch was indexed over the first (slot %d)", got)
	}
	if got := d.Flush(); len(got) != 0 {
		t.Fatalf("findings %+v", got)
	}
}
