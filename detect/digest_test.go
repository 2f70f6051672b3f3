package detect

import (
	"hash/maphash"
	"testing"
	"time"
)

// TestDigestCollision: a batch whose key's digest is held by another
// batch's slot is never taken for that batch, nor indexed over it, and
// forgetting it leaves the other's entry.
func TestDigestCollision(t *testing.T) {
	d := New(Options{Window: time.Second})
	d.Produce(ex(conn1, 1, 0, 10, 0, 0, plain(0xa)))
	first, ok, _ := d.findBytes(d.bytesKey(d.slab.at(0)))
	if !ok {
		t.Fatal("first batch not indexed")
	}
	// Make the second batch's digest collide with the first's slot: its
	// key as add builds it, checked below against the remembered batch.
	second := plain(0xb)
	k := bytesKey{owner: d.ownerOf(conn1, &rdkafka, false), topic: "test", partition: 0, crc: second.CRC, hash: second.Hash}
	h := maphash.Comparable(d.seed, k)
	d.byBytes[h] = first
	d.Produce(ex(conn1, 2, 100, 110, 0, 1, second))
	if s := d.Stats(); s.Resends != 0 || s.Remembered != 2 {
		t.Fatalf("the colliding batch was taken for a re-send of the first: %+v", s)
	}
	if got := maphash.Comparable(d.seed, d.bytesKey(d.slab.at(1))); got != h {
		t.Fatal("the second batch's key is not the one planted: the test tests nothing")
	}
	if got := d.byBytes[h]; got != first {
		t.Fatalf("the colliding batch was indexed over the first (slot %d)", got)
	}
	// The second batch is forgotten (its window passes); the planted entry,
	// the first's slot, stays.
	d.Advance(ms(5000))
	if s := d.Stats(); s.Remembered != 0 {
		t.Fatalf("%d batches remembered after the window", s.Remembered)
	}
	if got, ok := d.byBytes[h]; !ok || got != first {
		t.Fatalf("forgetting the second batch removed the first's entry: %d %v", got, ok)
	}
}
