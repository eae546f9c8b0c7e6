package resourcetree

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// treeNode is a node of kind and name in namespace ns, uid "uid-<kind>-<name>", under
// parent (nil: one of the Application's own resources).
func treeNode(kind, name string, parent *argov1alpha1.ResourceNode) argov1alpha1.ResourceNode {
	n := argov1alpha1.ResourceNode{
		ResourceRef: argov1alpha1.ResourceRef{Version: "v1", Kind: kind, Namespace: "ns", Name: name, UID: "uid-" + kind + "-" + name},
		Health:      &argov1alpha1.HealthStatus{Status: "Healthy"},
	}
	if parent != nil {
		n.ParentRefs = []argov1alpha1.ResourceRef{parent.ResourceRef}
	}
	return n
}

// deploymentTree is a tree of deployments Deployments, each with a ReplicaSet and pods
// Pods under it, and orphans orphaned ConfigMaps: deployments*(2+pods) nodes and orphans.
func deploymentTree(deployments, pods, orphans int) *argov1alpha1.ApplicationTree {
	tree := &argov1alpha1.ApplicationTree{}
	for d := range deployments {
		deploy := treeNode("Deployment", fmt.Sprintf("web-%d", d), nil)
		rs := treeNode("ReplicaSet", fmt.Sprintf("web-%d-rs", d), &deploy)
		tree.Nodes = append(tree.Nodes, deploy, rs)
		for p := range pods {
			tree.Nodes = append(tree.Nodes, treeNode("Pod", fmt.Sprintf("web-%d-rs-%d", d, p), &rs))
		}
	}
	for o := range orphans {
		tree.OrphanedNodes = append(tree.OrphanedNodes, treeNode("ConfigMap", fmt.Sprintf("orphan-%d", o), nil))
	}
	return tree
}

// kinds counts the nodes of each kind in tree, orphaned ones under "orphaned <kind>".
func kinds(tree *argov1alpha1.ApplicationTree) map[string]int {
	out := map[string]int{}
	for _, n := range tree.Nodes {
		out[n.Kind]++
	}
	for _, n := range tree.OrphanedNodes {
		out["orphaned "+n.Kind]++
	}
	return out
}

func TestEncodeCaps(t *testing.T) {
	for name, tc := range map[string]struct {
		tree        *argov1alpha1.ApplicationTree
		wantKinds   map[string]int
		wantOmitted int32
	}{
		"a small tree is carried whole": {
			tree:      deploymentTree(2, 3, 1),
			wantKinds: map[string]int{"Deployment": 2, "ReplicaSet": 2, "Pod": 6, "orphaned ConfigMap": 1},
		},
		"an empty tree is carried": {
			tree:      &argov1alpha1.ApplicationTree{},
			wantKinds: map[string]int{},
		},
		"no tree is carried as an empty one": {
			wantKinds: map[string]int{},
		},
		"over MaxTreeNodes, the deepest nodes go first": {
			// 100 Deployments, 100 ReplicaSets, 1900 Pods: 100 Pods too many.
			tree:        deploymentTree(100, 19, 0),
			wantKinds:   map[string]int{"Deployment": 100, "ReplicaSet": 100, "Pod": 1800},
			wantOmitted: 100,
		},
		"children go before orphaned nodes": {
			// 1000 Deployments, 1000 ReplicaSets and 300 orphans: 300 too many.
			tree:        deploymentTree(1000, 0, 300),
			wantKinds:   map[string]int{"Deployment": 1000, "ReplicaSet": 700, "orphaned ConfigMap": 300},
			wantOmitted: 300,
		},
		"once the children are gone, the orphaned nodes go": {
			// 1900 Deployments, 1900 ReplicaSets and 200 orphans: 2000 too many.
			tree:        deploymentTree(1900, 0, 200),
			wantKinds:   map[string]int{"Deployment": 1900, "orphaned ConfigMap": 100},
			wantOmitted: 2000,
		},
		"the Application's own resources go last": {
			tree: func() *argov1alpha1.ApplicationTree {
				tree := deploymentTree(2100, 0, 50)
				var own []argov1alpha1.ResourceNode
				for _, n := range tree.Nodes {
					if n.Kind == "Deployment" {
						own = append(own, n)
					}
				}
				tree.Nodes = own
				return tree
			}(),
			wantKinds:   map[string]int{"Deployment": 2000},
			wantOmitted: 150,
		},
		"a child whose parent is not in the tree goes before the orphaned nodes": {
			tree: func() *argov1alpha1.ApplicationTree {
				tree := deploymentTree(1999, 0, 1)
				var kept []argov1alpha1.ResourceNode
				for _, n := range tree.Nodes {
					if n.Kind == "Deployment" {
						kept = append(kept, n)
					}
				}
				lost := treeNode("Pod", "lost", &argov1alpha1.ResourceNode{ResourceRef: argov1alpha1.ResourceRef{Kind: "ReplicaSet", Name: "gone", UID: "gone"}})
				tree.Nodes = append([]argov1alpha1.ResourceNode{lost}, kept...)
				return tree
			}(),
			wantKinds:   map[string]int{"Deployment": 1999, "orphaned ConfigMap": 1},
			wantOmitted: 1,
		},
	} {
		t.Run(name, func(t *testing.T) {
			data, err := Encode(tc.tree)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			got, err := Decode(&data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(tc.wantKinds, kinds(got)); diff != "" {
				t.Errorf("nodes kept (-want +got):\n%s", diff)
			}
			if data.OmittedNodes != tc.wantOmitted {
				t.Errorf("OmittedNodes = %d, want %d", data.OmittedNodes, tc.wantOmitted)
			}
			if want := int32(len(got.Nodes) + len(got.OrphanedNodes)); data.Nodes != want {
				t.Errorf("Nodes = %d, the tree carries %d", data.Nodes, want)
			}
		})
	}
}

func TestEncodeCapsCompressedBytes(t *testing.T) {
	// 400 Deployments with a ReplicaSet each, every node carrying 600 random bytes in hex
	// (compressing to half): some 490 KB compressed, over the bound.
	tree := deploymentTree(400, 0, 0)
	for i := range tree.Nodes {
		noise := make([]byte, 600)
		_, _ = rand.Read(noise)
		tree.Nodes[i].Info = []argov1alpha1.InfoItem{{Name: "noise", Value: hex.EncodeToString(noise)}}
	}
	data, err := Encode(tree)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if len(data.Compressed) > appsv1alpha1.MaxTreeCompressedBytes {
		t.Fatalf("compressed tree of %d bytes, over the bound %d", len(data.Compressed), appsv1alpha1.MaxTreeCompressedBytes)
	}
	got, err := Decode(&data)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	k := kinds(got)
	if k["Deployment"] != 400 || k["ReplicaSet"] == 400 {
		t.Errorf("kept %v: want every Deployment and not every ReplicaSet", k)
	}
	if int(data.OmittedNodes) != 800-int(data.Nodes) || data.OmittedNodes == 0 {
		t.Errorf("Nodes %d, OmittedNodes %d of 800", data.Nodes, data.OmittedNodes)
	}
	// The cap keeps as many nodes as fit: one more ReplicaSet would not.
	if p, err := encodeKeeping(tree, dropOrder(tree), int(data.Nodes)+1); err != nil {
		t.Fatal(err)
	} else if p.fits() {
		t.Errorf("%d nodes would have fitted, %d kept", data.Nodes+1, data.Nodes)
	}
}

func TestRoundTrip(t *testing.T) {
	tree := deploymentTree(3, 2, 2)
	tree.Nodes[0].Info = []argov1alpha1.InfoItem{{Name: "Revision", Value: "Rev:3"}}
	tree.Nodes[2].Images = []string{"nginx:1.27"}
	tree.Hosts = []argov1alpha1.HostInfo{{Name: "node-1", SystemInfo: corev1.NodeSystemInfo{Architecture: "amd64"}}}
	tree.ShardsCount = 2
	before := tree.DeepCopy()

	data, err := Encode(tree)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if diff := cmp.Diff(before, tree); diff != "" {
		t.Fatalf("Encode changed its tree (-before +after):\n%s", diff)
	}
	got, err := Decode(&data)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	// ShardsCount is how Argo CD stored the tree, not part of it.
	want := before
	want.ShardsCount = 0
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded tree (-want +got):\n%s", diff)
	}
	if data.Nodes != 14 || data.OmittedNodes != 0 {
		t.Errorf("Nodes %d, OmittedNodes %d; want 14, 0", data.Nodes, data.OmittedNodes)
	}
	again, err := Encode(got)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if again.Digest != data.Digest {
		t.Errorf("the same tree encodes to digest %s, then %s", data.Digest, again.Digest)
	}
	changed := got.DeepCopy()
	changed.Nodes[1].Health.Status = "Degraded"
	if other, _ := Encode(changed); other.Digest == data.Digest {
		t.Error("a changed health left the digest as it was")
	}
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestDecodeRefuses(t *testing.T) {
	good, err := Encode(deploymentTree(1, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	// A zip bomb: 17 MiB of spaces (valid JSON padding) compress to some 17 KiB.
	bomb := []byte(`{"nodes":[]}` + strings.Repeat(" ", MaxTreeJSONBytes+1<<20))
	notJSON := []byte("not a tree")
	for name, tc := range map[string]struct {
		data    *appsv1alpha1.ResourceTreeData
		wantErr string
	}{
		"no data": {wantErr: "no resource tree"},
		"a digest that is not the tree's": {
			data:    &appsv1alpha1.ResourceTreeData{Digest: strings.Repeat("0", 64), Compressed: good.Compressed},
			wantErr: "digest",
		},
		"more than MaxTreeJSONBytes once decompressed": {
			data:    &appsv1alpha1.ResourceTreeData{Digest: digestOf(bomb), Compressed: gzipped(t, bomb)},
			wantErr: "decompresses to more than",
		},
		"not gzip": {
			data:    &appsv1alpha1.ResourceTreeData{Digest: good.Digest, Compressed: []byte("plain")},
			wantErr: "decompressing",
		},
		"not JSON": {
			data:    &appsv1alpha1.ResourceTreeData{Digest: digestOf(notJSON), Compressed: gzipped(t, notJSON)},
			wantErr: "JSON",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Decode: %v, want an error saying %q", err, tc.wantErr)
			}
		})
	}
}
