package testcluster

import (
	"context"
	"errors"
	"sync"
)

// PairNetworks partitions containers with Docker networks alone — no
// iptables, which a scratch image does not have. Each pair of nodes
// shares an internal network of its own, where each node has its node id
// as alias: a node resolving a peer's name through Docker's DNS gets the
// peer's address on the one network they share, so whatever dials names
// (Raft does) takes the pair's link. Cutting a link disconnects one node
// from the pair's network; healing connects it again under its alias.
// Isolating a node cuts both of its links, a bridge partition one.
//
// Set the exported fields before Create; the methods are safe for
// concurrent use.
type PairNetworks struct {
	Prefix string   // the networks are <Prefix>-<a>-<b>
	Nodes  []string // node ids, also their aliases
	// Container is a node's container.
	Container func(node string) Container

	mu  sync.Mutex
	cut map[[2]string]string // cut pair (in node order) → the node disconnected
}

// pairs lists every pair of nodes, each in the order of nodes.
func pairs(nodes []string) [][2]string {
	var ps [][2]string
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			ps = append(ps, [2]string{a, b})
		}
	}
	return ps
}

// Network is the network of the link between a and b (either order).
func (m *PairNetworks) Network(a, b string) string {
	if b < a {
		a, b = b, a
	}
	return m.Prefix + "-" + a + "-" + b
}

// Create creates every pair's network, internal (node-to-node traffic
// only) and labelled label ("key=value").
func (m *PairNetworks) Create(ctx context.Context, label string) error {
	for _, p := range pairs(m.Nodes) {
		if err := CreateNetwork(ctx, m.Network(p[0], p[1]), label, true); err != nil {
			return err
		}
	}
	return nil
}

// Connect attaches every node's container to the networks of its pairs.
func (m *PairNetworks) Connect(ctx context.Context) error {
	for _, p := range pairs(m.Nodes) {
		for _, n := range p {
			if err := m.Container(n).Connect(ctx, m.Network(p[0], p[1]), n); err != nil {
				return err
			}
		}
	}
	return nil
}

// Cut severs the link between each pair, both directions, by
// disconnecting the pair's first node from the pair's network. A link
// already cut is left as it is.
func (m *PairNetworks) Cut(ctx context.Context, pairs [][2]string) error {
	for _, p := range pairs {
		key := p
		if p[1] < p[0] {
			key = [2]string{p[1], p[0]}
		}
		m.mu.Lock()
		_, done := m.cut[key]
		m.mu.Unlock()
		if done {
			continue
		}
		if err := m.Container(p[0]).Disconnect(ctx, m.Network(p[0], p[1])); err != nil {
			return err
		}
		m.mu.Lock()
		if m.cut == nil {
			m.cut = map[[2]string]string{}
		}
		m.cut[key] = p[0]
		m.mu.Unlock()
	}
	return nil
}

// Heal connects every cut link again.
func (m *PairNetworks) Heal(ctx context.Context) error {
	m.mu.Lock()
	cut := m.cut
	m.cut = nil
	m.mu.Unlock()
	var errs []error
	for p, node := range cut {
		if err := m.Container(node).Connect(ctx, m.Network(p[0], p[1]), node); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
