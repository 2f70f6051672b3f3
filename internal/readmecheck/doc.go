// Package readmecheck keeps the outputs pasted into a Markdown file (the
// README) equal to what the current binary prints: every fenced code block
// preceded by a marker comment
//
//	<!-- readme-check: analyze --records 5 testdata/seed.pcap; lines 1-12,20-$; dir testdata -->
//
// is the output of running the binary with those arguments (in dir, the
// file's own directory by default), cut to the given line ranges, an
// omitted stretch shown as a line "...". Check reports the blocks that
// differ; Update rewrites them. It sits beside the flow: it runs the
// kdupcap binary as a user would and must never import kdupcap's stages
// (capture, decode, detect, profile, report, pipeline).
//
// # Files
//
//   - readmecheck.go: Marker, Block, Parse, Render, Check and Update.
//   - cmd/readmecheck: the command `make readme-check` runs.
package readmecheck
