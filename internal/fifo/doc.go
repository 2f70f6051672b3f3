// Package fifo is the queue detect and profile keep their time-ordered
// entries in (batches by last touch, records, findings still revisable):
// a queue in chunks that never copies what it holds as it grows and
// reuses the chunks it has drained, so a run of days allocates nothing
// in its steady state.
//
// It is shared code of the stages, outside the flow: it imports nothing
// of kdupcap's, and must never import capture, decode, detect, profile,
// report or pipeline.
//
// # Files
//
//   - fifo.go: Queue.
package fifo
