package kafkatest

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// SASL is a SASL superuser of the cluster, and the credentials the
// producer and the read back authenticate with. kfake's SaslHandshake is
// v1 only, so the tokens travel in SaslAuthenticate frames; kgo
// re-authenticates on its connection (KIP-368) when ReauthAfter is set.
type SASL struct {
	// Mechanism is "PLAIN", "SCRAM-SHA-256" or "SCRAM-SHA-512".
	Mechanism      string
	User, Password string
	// ReauthAfter, when positive, is the broker's
	// connections.max.reauth.ms: its SaslAuthenticate answers carry that
	// session lifetime, and kgo authenticates again on the same
	// connection before it ends.
	ReauthAfter time.Duration
}

// clusterOpts are the kfake options of a cluster requiring a.
func (a *SASL) clusterOpts() []kfake.Opt {
	opts := []kfake.Opt{kfake.EnableSASL(), kfake.Superuser(a.Mechanism, a.User, a.Password)}
	if a.ReauthAfter > 0 {
		opts = append(opts, kfake.BrokerConfigs(map[string]string{
			"connections.max.reauth.ms": strconv.FormatInt(a.ReauthAfter.Milliseconds(), 10),
		}))
	}
	return opts
}

// mechanism is a's kgo mechanism.
func (a *SASL) mechanism() (sasl.Mechanism, error) {
	switch a.Mechanism {
	case "PLAIN":
		return plain.Auth{User: a.User, Pass: a.Password}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: a.User, Pass: a.Password}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: a.User, Pass: a.Password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("kafkatest: SASL mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", a.Mechanism)
}

// kgoOpts are the kgo options of a client authenticating as a; none for a
// nil a.
func (a *SASL) kgoOpts() ([]kgo.Opt, error) {
	if a == nil {
		return nil, nil
	}
	m, err := a.mechanism()
	if err != nil {
		return nil, err
	}
	return []kgo.Opt{kgo.SASL(m)}, nil
}

// KcatSettings are kcat's -X settings (for KcatProduce) authenticating as a
// over SASL_PLAINTEXT. librdkafka sends SaslHandshake v1 and
// SaslAuthenticate to a broker that offers them, as kfake does.
func (a *SASL) KcatSettings() []string {
	return []string{
		"security.protocol=SASL_PLAINTEXT",
		"sasl.mechanisms=" + a.Mechanism,
		"sasl.username=" + a.User,
		"sasl.password=" + a.Password,
	}
}
