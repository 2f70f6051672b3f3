// Package kwire frames Kafka responses the way a broker writes them, for the
// test and benchmark tools that play the broker (internal/gencap,
// internal/kafkatest, the live benchmark in pipeline). Requests need no
// helper here: kmsg.RequestFormatter frames them.
//
// # Place in the flow
//
// kwire sits outside the analysis flow (capture -> decode -> detect ->
// profile -> report -> pipeline -> cmd/kdupcap): it frames bytes for kdupcap
// to read, and no stage uses it, so that the tools judging decode share no
// code with it. It imports only kmsg and must never import capture, decode,
// detect, profile, report or pipeline; nothing under those packages but tests
// may import it.
//
// # What it takes and gives
//
// [AppendResponse] takes a kmsg.Response and its correlation ID and appends
// one whole frame to a slice: the int32 size, the correlation ID, the empty
// tag section of response header v1 when the response is flexible (never for
// ApiVersions, whose response header stays v0), then the body.
//
// # Bytes and bad input
//
// The caller owns dst and the response; AppendResponse keeps neither and
// grows dst as append does. Its input is built by the tools, never read from
// a wire, so there is no bad input to refuse: what kmsg encodes is framed as
// it is.
//
// # Files
//
//   - kwire.go: AppendResponse.
package kwire
