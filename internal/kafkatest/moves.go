package kafkatest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// LeaderMoves moves partition leaders while a producer runs: after every
// interval, drawn uniformly from Min..Max with a generator seeded by Seed,
// every partition's leader moves to another broker, picked with the same
// generator (kfake's MoveTopicPartition, which bumps the leader epoch). The
// old leader then answers the partition's produce requests with
// NOT_LEADER_OR_FOLLOWER and appends nothing. It needs two brokers or more.
type LeaderMoves struct {
	Min, Max time.Duration
	Seed     int64
}

func (m LeaderMoves) validate(brokers int) error {
	if m.Min <= 0 || m.Max < m.Min {
		return fmt.Errorf("kafkatest: leader moves every %v..%v: want 0 < Min <= Max", m.Min, m.Max)
	}
	if brokers < 2 {
		return fmt.Errorf("kafkatest: leader moves need 2 brokers or more, have %d", brokers)
	}
	return nil
}

// Move is one leader move the cluster made.
type Move struct {
	// Time is when kfake had moved the leader.
	Time      time.Time
	Topic     string
	Partition int32
	// From and To are the old and the new leader's node IDs.
	From, To int32
}

// MoveLeader moves the leader of topic's partition to node to and records
// the move (see Moves).
func (c *Cluster) MoveLeader(topic string, partition, to int32) (Move, error) {
	from := c.kf.LeaderFor(topic, partition)
	if from < 0 {
		return Move{}, fmt.Errorf("kafkatest: move leader of %s/%d: no such partition", topic, partition)
	}
	if err := c.kf.MoveTopicPartition(topic, partition, to); err != nil {
		return Move{}, fmt.Errorf("kafkatest: move leader of %s/%d from %d to %d: %w", topic, partition, from, to, err)
	}
	mv := Move{Time: time.Now(), Topic: topic, Partition: partition, From: from, To: to}
	c.mu.Lock()
	c.moves = append(c.moves, mv)
	c.mu.Unlock()
	return mv, nil
}

// Moves returns a copy of the leader moves made so far, in order.
func (c *Cluster) Moves() []Move {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Move(nil), c.moves...)
}

// MoveLeaders moves the leaders of topic's partitions 0..partitions-1 as m
// says until ctx ends, and returns the first error, nil when ctx ends.
func (c *Cluster) MoveLeaders(ctx context.Context, topic string, partitions int32, m LeaderMoves) error {
	nodes := len(c.Ports())
	if err := m.validate(nodes); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(m.Seed), uint64(m.Seed)>>32^0x9e3779b97f4a7c15))
	for {
		wait := m.Min + time.Duration(rng.Int64N(int64(m.Max-m.Min)+1))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		for p := range partitions {
			from := c.kf.LeaderFor(topic, p)
			to := int32(rng.IntN(nodes - 1))
			if to >= from {
				to++ // any node but from
			}
			if _, err := c.MoveLeader(topic, p, to); err != nil {
				return err
			}
		}
	}
}
