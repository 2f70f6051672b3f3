package report

// saslText is a connection's SASL authentication in the connections table:
// the user and the mechanism, "alice (SCRAM-SHA-256)"; "unknown (GSSAPI)"
// when the mechanism does not show the user; "failed (PLAIN)"; "-" when
// none was captured. Names off the wire are quoted when not printable.
func saslText(c Connection) string {
	mech := ""
	if c.SASLMechanism != "" {
		mech = " (" + Printable(c.SASLMechanism) + ")"
	}
	switch {
	case c.SASLFailed:
		return "failed" + mech
	case c.SASLUser != "":
		return Printable(c.SASLUser) + mech
	case mech != "":
		return "unknown" + mech
	}
	return "-"
}
