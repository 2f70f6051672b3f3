// Package tlsdecrypt decrypts the TLS connections of a capture from key
// logs, between capture's TCP reassembly and the Kafka decoder:
//
//	capture (reassembly) -> tlsdecrypt -> decode -> detect -> ...
//
// It takes the ordered bytes of each TCP connection as a [capture.Stream]
// and gives the next stage's Stream the same calls, with the application
// data of TLS connections decrypted in place of their records. It knows
// TLS and never Kafka: it imports capture (for Stream and NewStreamFunc),
// the standard library and golang.org/x/crypto only, and must never import
// decode, detect, profile, report or pipeline. The record layer and key
// schedule are its own (RFC 8446 5 and 7, RFC 5246 5 and 6, RFC 7366,
// RFC 7905); the ciphers are crypto/aes, crypto/cipher, crypto/hmac and
// x/crypto/chacha20poly1305.
//
// [Decrypter.Wrap] puts a first-bytes check in front of every stream: a
// connection that starts with a ClientHello is TLS, one whose first bytes
// are TLS records without a handshake is [MidStream] (consumed, never
// handed on as Kafka), and anything else passes through untouched and
// uncopied. Secrets come from a [KeyLog] (NSS key log format: files,
// pcapng Decryption Secrets Blocks, a growing file followed with
// [KeyLog.Follow]); a [ConnState] per connection and [Stats] say what
// became of each; [Decrypter.KeyLines] gives the lines that decrypt one
// connection, for evidence files.
//
// # Ownership
//
// Bytes handed to Data belong to the caller and are used only during the
// call; the plaintext handed on belongs to tlsdecrypt and is valid only
// during the inner Data call, as capture's Stream contract says. A
// connection's Stream methods are called from one goroutine; Decrypter and
// KeyLog are safe for concurrent use.
//
// # Bounds and bad input
//
// Records are at most 2^14+2048 bytes; a handshake message kept at most
// 64 KiB; records waiting for late keys at most Options.MaxBufferPerConn
// per connection and MaxBufferTotal in all, beyond which the connection
// is NoKey. A record that fails authentication (a wrong key or damaged
// bytes) stops that direction: it is counted as [BadMAC] and nothing after
// it is handed on, so a wrong key log never yields plaintext. After a TCP
// gap the next record is found by its header and tried with the next
// MaxGapRecords sequence numbers; if none authenticates, the rest of that
// direction is [Undecryptable]. Every loss is passed on as a Gap. Malformed
// key log lines are counted with their position, never fatal. Secret bytes
// never appear in an error, a message or a String; nothing panics on bad
// input, and a record decrypts without allocating. A plaintext
// connection costs one allocation of under 128 bytes: the state of TLS is
// made only for a connection whose first bytes need it.
//
// # Files
//
//   - keylog.go: KeyLog, the NSS key log parser and store.
//   - follow.go: Follower, reading lines appended to a key log file.
//   - decrypter.go: Decrypter, Options, Wrap, Status, ConnState, Stats,
//     KeyLines; session and ticket caches for TLS 1.2 resumption.
//   - conn.go: a connection's Stream: first-bytes check, record framing,
//     handshake state, late keys, gaps; the small conn every connection
//     has, and the tlsState of those whose first bytes need more.
//   - hello.go: ClientHello, ServerHello and handshake message parsing.
//   - record.go: recordCipher, opening TLS 1.3 and 1.2 records.
//   - keysched.go: HKDF-Expand-Label, KeyUpdate, the TLS 1.2 PRF and key
//     block.
//   - suites.go: the cipher suites decrypted.
package tlsdecrypt
