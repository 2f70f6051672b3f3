// Command kdupcap finds Kafka producer retries that wrote data twice, straight
// from packet captures.
//
//	kdupcap analyze dump.pcap [more.pcapng ...]
//
// # Where it sits
//
// cmd/kdupcap is wiring only: it parses flags, opens inputs with capture,
// hands capture's reassembled streams to decode, decode's produce exchanges to
// detect, and detect's findings to report. It holds no protocol logic of its
// own; every rule lives in the stage that owns it.
//
// # Errors and exit codes
//
// 0: the analysis ran (findings or not). 2: bad usage, or an input that could
// not be read wholly; the message names the file and the byte position, and
// everything read before the fault is still reported. 3: --fail-on-duplicate
// and a finding is duplicated or unconfirmed. 1: the output could not be
// written.
package main
