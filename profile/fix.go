package profile

// Fix names the one setting of p's client that would have kept its
// re-sends from writing records twice, in the words of the client's own
// documentation (the client it named in ApiVersions, or the one its
// client.id suggests, said to be a guess):
//
//   - not idempotent: idempotence ("enable.idempotence=true" for
//     librdkafka), or, for a client that has none (kafka-go), that it has
//     none;
//   - idempotent, with records sent again under another epoch or producer
//     ID (Renumbered), which the broker cannot deduplicate: a
//     transactional producer read with read_committed, which hides the
//     copies of the aborted sends.
//
// It is empty when no setting of the producer's would have: an idempotent
// producer that renumbered nothing (its re-sends are deduplicated).
func Fix(p *Producer) string {
	names, guessed := clientOf(p)
	var fix string
	switch {
	case !p.Idempotent && names.idempotence != "":
		fix = names.idempotence
	case !p.Idempotent:
		fix = "none: " + names.name + " has no idempotent producer"
	case p.Renumbered > 0 && names.transactional != "":
		fix = names.transactional + " with read_committed consumers"
	default:
		return ""
	}
	if guessed {
		fix += " (if this is " + names.name + ")"
	}
	return fix
}
