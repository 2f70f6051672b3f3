package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Report is one delivery report, printed as a JSON line on stdout.
type Report struct {
	Value     string `json:"value"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Error is "" when the delivery succeeded, else librdkafka's message
	// (e.g. "Local: Message timed out"); Code is its error code (e.g.
	// -192, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT).
	Error string `json:"error,omitempty"`
	Code  int    `json:"code,omitempty"`
}

// config is what the flags say.
type config struct {
	brokers   string
	topic     string
	partition int
	settings  []string
	async     bool
	interval  time.Duration
	wait      time.Duration
	debug     string
}

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "rdproduce:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("rdproduce", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.brokers, "b", "", "bootstrap.servers")
	fs.StringVar(&c.topic, "t", "", "topic")
	fs.IntVar(&c.partition, "p", 0, "partition; -1 lets the partitioner choose")
	fs.Func("X", "librdkafka setting key=value (repeatable)", func(s string) error {
		if k, _, ok := strings.Cut(s, "="); !ok || k == "" {
			return fmt.Errorf("want key=value, got %q", s)
		}
		c.settings = append(c.settings, s)
		return nil
	})
	fs.BoolVar(&c.async, "async", false, "produce every value, then flush; else wait for each delivery report before the next value")
	fs.DurationVar(&c.interval, "interval", 0, "pause after each produce call")
	fs.DurationVar(&c.wait, "wait", 60*time.Second, "bound on the wait for all delivery reports")
	fs.StringVar(&c.debug, "debug", "", "librdkafka debug contexts (e.g. msg,protocol,eos), logged on stderr")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.brokers == "" || c.topic == "" {
		return c, errors.New("-b and -t are required")
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return c, nil
}

// run produces the lines of stdin as values and prints one Report a
// delivery report on stdout. A failed delivery is a report, not an error:
// the caller judges it; run fails only when it cannot produce or when some
// report does not come within -wait.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	var values []string
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		values = append(values, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read values: %w", err)
	}

	cm := kafka.ConfigMap{"bootstrap.servers": c.brokers}
	for _, s := range c.settings {
		if err := cm.Set(s); err != nil {
			return fmt.Errorf("setting %q: %w", s, err)
		}
	}
	if c.debug != "" {
		if err := cm.SetKey("debug", c.debug); err != nil {
			return fmt.Errorf("debug %q: %w", c.debug, err)
		}
	}
	p, err := kafka.NewProducer(&cm)
	if err != nil {
		return fmt.Errorf("new producer: %w", err)
	}
	defer p.Close()

	out := json.NewEncoder(stdout)
	report := func(m *kafka.Message) error {
		r := Report{Value: string(m.Value), Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset)}
		if err := m.TopicPartition.Error; err != nil {
			r.Error = err.Error()
			var kerr kafka.Error
			if errors.As(err, &kerr) {
				r.Code = int(kerr.Code())
			}
		}
		return out.Encode(r)
	}

	topic := c.topic
	tp := kafka.TopicPartition{Topic: &topic, Partition: int32(c.partition)}
	if c.partition < 0 {
		tp.Partition = kafka.PartitionAny
	}
	deadline := time.After(c.wait)
	dr := make(chan kafka.Event, len(values)+1)
	pending := 0
	// await takes delivery reports until only n are pending.
	await := func(n int) error {
		for pending > n {
			select {
			case ev := <-dr:
				m, ok := ev.(*kafka.Message)
				if !ok {
					continue
				}
				pending--
				if err := report(m); err != nil {
					return fmt.Errorf("write report: %w", err)
				}
			case <-deadline:
				return fmt.Errorf("%d delivery reports missing after %s", pending, c.wait)
			}
		}
		return nil
	}
	go func() { // errors and logs that are not delivery reports
		for ev := range p.Events() {
			if e, ok := ev.(kafka.Error); ok {
				fmt.Fprintf(stderr, "rdproduce: event: %v (code %d, fatal %t)\n", e, e.Code(), e.IsFatal())
			}
		}
	}()
	for _, v := range values {
		msg := &kafka.Message{TopicPartition: tp, Value: []byte(v)}
		if err := p.Produce(msg, dr); err != nil {
			return fmt.Errorf("produce %q: %w", v, err)
		}
		pending++
		if !c.async {
			if err := await(0); err != nil {
				return err
			}
		}
		if c.interval > 0 {
			time.Sleep(c.interval)
		}
	}
	if err := await(0); err != nil {
		return err
	}
	if n := p.Flush(int(c.wait.Milliseconds())); n > 0 {
		return fmt.Errorf("%d events not flushed after %s", n, c.wait)
	}
	return nil
}
