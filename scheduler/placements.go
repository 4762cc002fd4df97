package scheduler

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
)

// Placements is an incremental placement state for a [Framework]: the VMIs
// that hold node resources, the summed requests per node, an index of the
// placed VMIs by label and the set of placed VMIs with required
// anti-affinity terms. Its owner feeds it every change of every VMI
// ([Placements.Observe], [Placements.Forget]); [Placements.Schedule] then
// decides in O(nodes + VMIs with anti-affinity + VMIs the new VMI's own
// affinity terms select), never scanning every placed VMI, and reserves
// the chosen node before it returns, so concurrent decisions cannot
// over-commit a node. Decisions are the same as [Framework.Schedule] with the
// same VMIs passed as placed. It is safe for concurrent use.
type Placements struct {
	f  *Framework
	mu sync.Mutex
	// vmis are the VMIs holding a node, by namespace/name.
	vmis map[types.NamespacedName]*placement
	// usage sums the requests of the VMIs holding each node.
	usage map[string]Resources
	// devices sums the host device resources the VMIs holding each node
	// ask for (see [DeviceRequests]); nodes without any are absent.
	devices map[string]map[virtkit.ResourceName]int64
	// anti are the placed VMIs with required anti-affinity terms (they
	// may repel the VMI being placed).
	anti map[types.NamespacedName]*placement
	// index maps label key -> value -> the placed VMIs with that label;
	// nil in the throw-away state of one stateless Schedule, which keeps
	// its VMIs in scan instead of vmis and scans them.
	index map[string]map[string]map[types.NamespacedName]*placement
	scan  []placement
}

// placement is what the state keeps of one VMI holding node resources.
type placement struct {
	key    types.NamespacedName
	labels map[string]string
	nodes  [2]string // the node and a migration target; "" when absent
	req    Resources
	dev    map[virtkit.ResourceName]int64 // host device resources; nil for none
	anti   []vmiTerm                      // required anti-affinity terms that compile
}

// NewPlacements returns an empty placement state deciding like d.
func (f *Framework) NewPlacements() *Placements {
	return &Placements{
		f:     f,
		vmis:  map[types.NamespacedName]*placement{},
		usage: map[string]Resources{},
		anti:  map[types.NamespacedName]*placement{},
		index: map[string]map[string]map[types.NamespacedName]*placement{},
	}
}

// scanState is the throw-away state of one stateless decision: usage and
// anti-affinity holders like NewPlacements', the VMIs in a slice (their
// labels shared with the caller's objects, which must not change during
// the call), no index.
func (f *Framework) scanState(placed []*virtkit.VirtualMachineInstance, skip types.NamespacedName) *Placements {
	p := &Placements{f: f, usage: map[string]Resources{}, anti: map[types.NamespacedName]*placement{}, scan: make([]placement, 0, len(placed))}
	for _, v := range placed {
		if v == nil || (v.Namespace == skip.Namespace && v.Name == skip.Name) {
			continue
		}
		n1, n2 := heldNodes(v)
		if n1 == "" && n2 == "" {
			continue
		}
		p.scan = append(p.scan, placement{
			key:    types.NamespacedName{Namespace: v.Namespace, Name: v.Name},
			labels: v.Labels, nodes: [2]string{n1, n2}, req: RequestsOf(v), dev: DeviceRequests(v),
		})
		pl := &p.scan[len(p.scan)-1]
		for _, n := range pl.nodes {
			if n != "" {
				u := p.usage[n]
				u.add(pl.req)
				p.usage[n] = u
				p.addDevices(n, pl.dev, 1)
			}
		}
		if aff := v.Spec.Affinity; aff != nil && aff.PodAntiAffinity != nil {
			pl.anti = compileAnti(v)
			if len(pl.anti) > 0 {
				p.anti[pl.key] = pl
			}
		}
	}
	return p
}

// Observe records the current state of a VMI: it holds the nodes of
// [NodesHeldBy] with its requests, or nothing. Observe keeps no reference to
// vmi.
func (p *Placements) Observe(vmi *virtkit.VirtualMachineInstance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.set(vmi)
}

// ObserveIfUnknown records vmi like Observe unless the state already holds
// a VMI of that name (a fresher observation than, say, an initial list).
func (p *Placements) ObserveIfUnknown(vmi *virtkit.VirtualMachineInstance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.vmis[types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Name}]; !ok {
		p.set(vmi)
	}
}

// Forget drops a VMI (it was deleted).
func (p *Placements) Forget(namespace, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.remove(types.NamespacedName{Namespace: namespace, Name: name})
}

// Current reports whether the state already holds vmi on the nodes it
// holds, with the same labels: observing it would change nothing.
func (p *Placements) Current(vmi *virtkit.VirtualMachineInstance) bool {
	n1, n2 := heldNodes(vmi)
	p.mu.Lock()
	defer p.mu.Unlock()
	pl, ok := p.vmis[types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Name}]
	if !ok {
		return n1 == "" && n2 == ""
	}
	return pl.nodes == [2]string{n1, n2} && maps.Equal(pl.labels, vmi.Labels)
}

// Len is the number of VMIs holding a node.
func (p *Placements) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.vmis)
}

// Schedule chooses a node for vmi like [Framework.Schedule] with every
// observed VMI but vmi itself as placed, and records vmi on that node at
// once (an assumption the caller's next Observe confirms or corrects). On
// error the state is unchanged.
func (p *Placements) Schedule(ctx context.Context, vmi *virtkit.VirtualMachineInstance, nodes []virtkit.Node) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if vmi == nil {
		return "", fmt.Errorf("%w: vmi: required", ErrInvalidSpec)
	}
	key := types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Name}
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.vmis[key]
	p.remove(key)
	node, err := p.f.decide(ctx, vmi, nodes, p)
	if err != nil {
		if old != nil {
			p.add(old)
		}
		return "", err
	}
	p.add(newPlacement(vmi, node, ""))
	return node, nil
}

func newPlacement(vmi *virtkit.VirtualMachineInstance, n1, n2 string) *placement {
	pl := &placement{
		key:    types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Name},
		labels: maps.Clone(vmi.Labels),
		nodes:  [2]string{n1, n2},
		req:    RequestsOf(vmi),
		dev:    DeviceRequests(vmi),
	}
	pl.anti = compileAnti(vmi)
	return pl
}

// compileAnti compiles a placed VMI's required anti-affinity terms.
func compileAnti(vmi *virtkit.VirtualMachineInstance) []vmiTerm {
	aff := vmi.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil {
		return nil
	}
	var out []vmiTerm
	for _, pt := range aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		t, err := compileVMITerm(vmi.Namespace, pt, "")
		if err != nil {
			continue // their spec, not ours: ignore what cannot be evaluated
		}
		out = append(out, t)
	}
	return out
}

// set replaces what is known of vmi; p.mu must be held.
func (p *Placements) set(vmi *virtkit.VirtualMachineInstance) {
	p.remove(types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Name})
	n1, n2 := heldNodes(vmi)
	if n1 == "" && n2 == "" {
		return
	}
	p.add(newPlacement(vmi, n1, n2))
}

func (p *Placements) add(pl *placement) {
	p.vmis[pl.key] = pl
	for _, n := range pl.nodes {
		if n != "" {
			u := p.usage[n]
			u.add(pl.req)
			p.usage[n] = u
			p.addDevices(n, pl.dev, 1)
		}
	}
	if len(pl.anti) > 0 {
		p.anti[pl.key] = pl
	}
	for k, v := range pl.labels {
		byValue := p.index[k]
		if byValue == nil {
			byValue = map[string]map[types.NamespacedName]*placement{}
			p.index[k] = byValue
		}
		set := byValue[v]
		if set == nil {
			set = map[types.NamespacedName]*placement{}
			byValue[v] = set
		}
		set[pl.key] = pl
	}
}

func (p *Placements) remove(key types.NamespacedName) {
	pl, ok := p.vmis[key]
	if !ok {
		return
	}
	delete(p.vmis, key)
	for _, n := range pl.nodes {
		if n == "" {
			continue
		}
		p.addDevices(n, pl.dev, -1)
		u := p.usage[n]
		u.sub(pl.req)
		if u == (Resources{}) {
			delete(p.usage, n)
		} else {
			p.usage[n] = u
		}
	}
	delete(p.anti, key)
	for k, v := range pl.labels {
		byValue := p.index[k]
		delete(byValue[v], key)
		if len(byValue[v]) == 0 {
			delete(byValue, v)
		}
		if len(byValue) == 0 {
			delete(p.index, k)
		}
	}
}

// selected calls fn for every placed VMI the term selects, until fn
// returns false. It starts from
// the smallest index set one of the selector's In, = or Exists
// requirements allows, and scans every placed VMI only for selectors made
// of negative requirements alone.
func (p *Placements) selected(t vmiTerm, fn func(*placement) bool) {
	reqs, selectable := t.selector.Requirements()
	if !selectable {
		return // labels.Nothing
	}
	visit := func(pl *placement) bool {
		return !t.selectsLabels(pl.key.Namespace, pl.labels) || fn(pl)
	}
	if p.index == nil {
		for i := range p.scan {
			if !visit(&p.scan[i]) {
				return
			}
		}
		return
	}
	var best []map[types.NamespacedName]*placement
	bestN := -1
	for _, r := range reqs {
		var sets []map[types.NamespacedName]*placement
		switch r.Operator() {
		case selection.In, selection.Equals, selection.DoubleEquals:
			for v := range r.Values() {
				if s := p.index[r.Key()][v]; len(s) > 0 {
					sets = append(sets, s)
				}
			}
		case selection.Exists:
			for _, s := range p.index[r.Key()] {
				sets = append(sets, s)
			}
		default:
			continue
		}
		n := 0
		for _, s := range sets {
			n += len(s)
		}
		if bestN < 0 || n < bestN {
			best, bestN = sets, n
		}
	}
	if bestN < 0 {
		for _, pl := range p.vmis {
			if !visit(pl) {
				return
			}
		}
		return
	}
	for _, s := range best {
		for _, pl := range s {
			if !visit(pl) {
				return
			}
		}
	}
}

// interVMI is what inter-VMI (anti-)affinity needs for one decision,
// computed once from the state: per term, the topology domains that hold
// VMIs it selects.
type interVMI struct {
	affinity []termDomains
	anti     []termDomains
	// repelled are the domains placed VMIs' required anti-affinity keeps
	// the new VMI out of (symmetry).
	repelled []termDomains
	prefer   []weightedDomains
}

type termDomains struct {
	topologyKey string
	domains     map[string]bool
	// anywhere: the term selects some placed VMI, wherever it is.
	anywhere bool
}

type weightedDomains struct {
	topologyKey string
	// weight per domain: the term's weight times the selected VMIs there
	// (negative for anti-affinity).
	weight map[string]float64
}

// interVMI computes the inter-VMI view of one decision; p.mu must be held
// when p is shared.
func (p *Placements) interVMI(c *compiled, byName map[string]*NodeInfo) *interVMI {
	iv := &interVMI{}
	domainsOf := func(pl *placement, key string, fn func(string)) {
		for _, n := range pl.nodes {
			if n == "" {
				continue
			}
			if ni := byName[n]; ni != nil {
				if v, ok := domain(ni, key); ok {
					fn(v)
				}
			}
		}
	}
	// Required terms only ask which domains hold a selected VMI: once
	// every candidate node's domain does, the rest cannot change a thing.
	nodeDomains := func(key string) int {
		seen := map[string]bool{}
		for _, n := range byName {
			if v, ok := domain(n, key); ok {
				seen[v] = true
			}
		}
		return len(seen)
	}
	required := func(t vmiTerm) termDomains {
		td := termDomains{topologyKey: t.topologyKey, domains: map[string]bool{}}
		all := nodeDomains(t.topologyKey)
		p.selected(t, func(pl *placement) bool {
			td.anywhere = true
			domainsOf(pl, t.topologyKey, func(v string) { td.domains[v] = true })
			return len(td.domains) < all
		})
		return td
	}
	for _, t := range c.affinity {
		iv.affinity = append(iv.affinity, required(t))
	}
	for _, t := range c.anti {
		iv.anti = append(iv.anti, required(t))
	}
	for _, pl := range p.anti {
		for _, t := range pl.anti {
			if !t.selects(c.vmi) {
				continue
			}
			td := termDomains{topologyKey: t.topologyKey, domains: map[string]bool{}}
			domainsOf(pl, t.topologyKey, func(v string) { td.domains[v] = true })
			if len(td.domains) > 0 {
				iv.repelled = append(iv.repelled, td)
			}
		}
	}
	preferred := func(t vmiTerm, w float64) {
		wd := weightedDomains{topologyKey: t.topologyKey, weight: map[string]float64{}}
		p.selected(t, func(pl *placement) bool {
			domainsOf(pl, t.topologyKey, func(v string) { wd.weight[v] += w })
			return true
		})
		if len(wd.weight) > 0 {
			iv.prefer = append(iv.prefer, wd)
		}
	}
	for _, t := range c.prefAffinity {
		preferred(t.term, float64(t.weight))
	}
	for _, t := range c.prefAnti {
		preferred(t.term, -float64(t.weight))
	}
	return iv
}

// check returns the required (anti-)affinity reason node n fails, or "".
func (iv *interVMI) check(c *compiled, n *NodeInfo) string {
	for i, td := range iv.affinity {
		v, ok := domain(n, td.topologyKey)
		if ok && td.domains[v] {
			continue
		}
		// The first VMI of a group that selects itself may go anywhere with
		// the topology key (kube-scheduler's rule), else nothing fits.
		if !td.anywhere && ok && c.affinity[i].selects(c.vmi) {
			continue
		}
		return reasonAffinity
	}
	for _, td := range iv.anti {
		if v, ok := domain(n, td.topologyKey); ok && td.domains[v] {
			return reasonAntiAffinity
		}
	}
	for _, td := range iv.repelled {
		if v, ok := domain(n, td.topologyKey); ok && td.domains[v] {
			return reasonExistingAnti
		}
	}
	return ""
}

// preferredScore sums the preferred (anti-)affinity weights for node n.
func (iv *interVMI) preferredScore(n *NodeInfo) float64 {
	s := 0.0
	for _, wd := range iv.prefer {
		if v, ok := domain(n, wd.topologyKey); ok {
			s += wd.weight[v]
		}
	}
	return s
}
