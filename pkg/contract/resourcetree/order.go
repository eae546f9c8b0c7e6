package resourcetree

import (
	"cmp"
	"math"
	"slices"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
)

// nodeRef is one node of a tree: its index in Nodes, or in OrphanedNodes.
type nodeRef struct {
	orphaned bool
	index    int
}

// identity is a resource's identity as a node's parentRefs name it.
type identity struct{ group, kind, namespace, name string }

func identityOf(r argov1alpha1.ResourceRef) identity {
	return identity{r.Group, r.Kind, r.Namespace, r.Name}
}

// dropOrder is every node of tree, those to keep longest first: the Application's own
// resources (nodes without a parent), then the orphaned nodes, then the children level
// by level (a child's level is that of its nearest parent plus one), then the children
// whose parents are not in the tree. Within a rank, the tree's own order. A tree cut to
// its first n nodes in this order so loses its deepest children first, then its orphaned
// nodes, and keeps the Application's own resources as long as it can.
func dropOrder(tree *argov1alpha1.ApplicationTree) []nodeRef {
	depth := depths(tree.Nodes)
	type ranked struct {
		ref  nodeRef
		rank int
	}
	all := make([]ranked, 0, len(tree.Nodes)+len(tree.OrphanedNodes))
	maxDepth := 0
	for _, d := range depth {
		if d != unreached {
			maxDepth = max(maxDepth, d)
		}
	}
	// Ranks: own resources 0, orphaned nodes 1, children of level d d+1, unreached
	// children after every level.
	for i, d := range depth {
		rank := d
		switch {
		case d == unreached:
			rank = maxDepth + 2
		case d > 0:
			rank = d + 1
		}
		all = append(all, ranked{nodeRef{index: i}, rank})
	}
	for i := range tree.OrphanedNodes {
		all = append(all, ranked{nodeRef{orphaned: true, index: i}, 1})
	}
	slices.SortStableFunc(all, func(a, b ranked) int { return cmp.Compare(a.rank, b.rank) })
	order := make([]nodeRef, len(all))
	for i, r := range all {
		order[i] = r.ref
	}
	return order
}

const unreached = math.MaxInt

// depths is each node's distance from the Application's own resources (the nodes
// without parents) along parentRefs, unreached for a node no parent chain leads to.
func depths(nodes []argov1alpha1.ResourceNode) []int {
	byIdentity := make(map[identity][]int, len(nodes))
	byUID := make(map[string][]int, len(nodes))
	for i, n := range nodes {
		byIdentity[identityOf(n.ResourceRef)] = append(byIdentity[identityOf(n.ResourceRef)], i)
		if n.UID != "" {
			byUID[n.UID] = append(byUID[n.UID], i)
		}
	}
	// children[i] are the nodes naming node i as a parent.
	children := make([][]int, len(nodes))
	depth := make([]int, len(nodes))
	var queue []int
	for i, n := range nodes {
		if len(n.ParentRefs) == 0 {
			depth[i] = 0
			queue = append(queue, i)
			continue
		}
		depth[i] = unreached
		for _, p := range n.ParentRefs {
			parents := byIdentity[identityOf(p)]
			if p.UID != "" && len(byUID[p.UID]) > 0 {
				parents = byUID[p.UID]
			}
			for _, parent := range parents {
				children[parent] = append(children[parent], i)
			}
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, c := range children[i] {
			if depth[c] == unreached {
				depth[c] = depth[i] + 1
				queue = append(queue, c)
			}
		}
	}
	return depth
}
