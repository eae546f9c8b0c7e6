package report

import (
	"cmp"
	"slices"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// maxParentLength is the schema's bound on a child's parent, "Kind/name".
const maxParentLength = maxKindLength + 1 + maxNameLength

// treeIndex is Argo CD's resource tree of one Application, indexed for the report:
// Argo CD's tree lists the Application's own resources and their children (what
// `argocd app resources` and the UI tree show), each with the health Argo CD computed.
type treeIndex struct {
	nodes []argov1alpha1.ResourceNode
	// byIdentity finds a node by group, kind, namespace and name (the version of a
	// resource status and of its node may differ: Argo CD picks the preferred one).
	byIdentity map[resourceIdentity]*argov1alpha1.ResourceNode
	byUID      map[string]*argov1alpha1.ResourceNode
}

type resourceIdentity struct{ group, kind, namespace, name string }

func indexTree(tree *argov1alpha1.ApplicationTree) *treeIndex {
	idx := &treeIndex{
		nodes:      tree.Nodes,
		byIdentity: make(map[resourceIdentity]*argov1alpha1.ResourceNode, len(tree.Nodes)),
		byUID:      make(map[string]*argov1alpha1.ResourceNode, len(tree.Nodes)),
	}
	for i := range tree.Nodes {
		n := &tree.Nodes[i]
		idx.byIdentity[resourceIdentity{n.Group, n.Kind, n.Namespace, n.Name}] = n
		if n.UID != "" {
			idx.byUID[n.UID] = n
		}
	}
	return idx
}

// healthOf is the health of the Application's resource r in the tree; nil when the tree
// has no node for it (the resource does not exist) or Argo CD computed none.
func (idx *treeIndex) healthOf(r *argov1alpha1.ResourceStatus) *argov1alpha1.HealthStatus {
	if n, ok := idx.byIdentity[resourceIdentity{r.Group, r.Kind, r.Namespace, r.Name}]; ok {
		return n.Health
	}
	return nil
}

// summary counts the tree's children (nodes that are not among managed, the
// Application's own resources) and lists the ones that are not Healthy, the most
// severe first (AttentionRank), at most MaxNotHealthyChildren; the rest are counted in t.
// A child without a health (Argo CD computes none for, say, an Endpoints) is counted,
// not listed: it says nothing about the Application's health.
func (idx *treeIndex) summary(managed []argov1alpha1.ResourceStatus, t *truncation) *appsv1alpha1.ResourceTreeReport {
	own := make(map[resourceIdentity]bool, len(managed))
	for _, r := range managed {
		own[resourceIdentity{r.Group, r.Kind, r.Namespace, r.Name}] = true
	}
	out := &appsv1alpha1.ResourceTreeReport{}
	for i := range idx.nodes {
		n := &idx.nodes[i]
		if own[resourceIdentity{n.Group, n.Kind, n.Namespace, n.Name}] {
			continue
		}
		out.Children++
		if n.Health == nil || n.Health.Status == "" || string(n.Health.Status) == string(appsv1alpha1.HealthStatusHealthy) {
			continue
		}
		if !validChildIdentity(n) {
			t.omittedChildren++
			continue
		}
		child := appsv1alpha1.ChildResourceReport{
			Group: n.Group, Version: n.Version, Kind: n.Kind, Namespace: n.Namespace, Name: n.Name,
			Health: appsv1alpha1.ResourceHealthReport{
				Status: healthStatus(string(n.Health.Status)),
				// Shortened below, once it is known which children the report keeps.
				Message: n.Health.Message,
			},
		}
		if root := idx.root(n, own); root != nil {
			if parent := root.Kind + "/" + root.Name; len(parent) <= maxParentLength {
				child.Parent = parent
			}
		}
		out.NotHealthy = append(out.NotHealthy, child)
	}
	slices.SortStableFunc(out.NotHealthy, func(a, b appsv1alpha1.ChildResourceReport) int {
		return cmp.Or(
			cmp.Compare(AttentionRank("", a.Health.Status), AttentionRank("", b.Health.Status)),
			cmp.Compare(a.Parent, b.Parent),
			cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name),
		)
	})
	if len(out.NotHealthy) > appsv1alpha1.MaxNotHealthyChildren {
		t.omittedChildren += len(out.NotHealthy) - appsv1alpha1.MaxNotHealthyChildren
		out.NotHealthy = out.NotHealthy[:appsv1alpha1.MaxNotHealthyChildren:appsv1alpha1.MaxNotHealthyChildren]
	}
	for i := range out.NotHealthy {
		h := &out.NotHealthy[i].Health
		h.Message = t.message(h.Message, appsv1alpha1.MaxResourceMessageLength)
	}
	if out.Children == 0 {
		return nil
	}
	return out
}

// root follows n's first parent up the tree to the Application's own resource it
// belongs to; nil when the chain leaves the tree (or loops).
func (idx *treeIndex) root(n *argov1alpha1.ResourceNode, own map[resourceIdentity]bool) *argov1alpha1.ResourceNode {
	seen := map[*argov1alpha1.ResourceNode]bool{n: true}
	for len(n.ParentRefs) > 0 {
		ref := n.ParentRefs[0]
		parent, ok := idx.byUID[ref.UID]
		if !ok || ref.UID == "" {
			parent, ok = idx.byIdentity[resourceIdentity{ref.Group, ref.Kind, ref.Namespace, ref.Name}]
		}
		if !ok || seen[parent] {
			return nil
		}
		if own[resourceIdentity{parent.Group, parent.Kind, parent.Namespace, parent.Name}] {
			return parent
		}
		seen[parent] = true
		n = parent
	}
	return nil
}

func validChildIdentity(n *argov1alpha1.ResourceNode) bool {
	return n.Kind != "" && n.Name != "" &&
		len(n.Kind) <= maxKindLength && len(n.Name) <= maxNameLength &&
		len(n.Group) <= maxGroupLength && len(n.Version) <= maxVersionLength &&
		len(n.Namespace) <= maxNamespaceLength
}
