// Package resourcetree is the wire form of an Application's resource tree between a
// managed cluster's agent and the hub: Argo CD's ApplicationTree as JSON, its digest,
// gzip-compressed, capped to the bounds of an ApplicationResourceTree. The agent encodes
// (Encode), the hub decodes (Decode); both sides take the rule from here.
package resourcetree

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	appsv1alpha1 "github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps/v1alpha1"
)

// MaxTreeJSONBytes bounds a tree's JSON, before compression. Encode keeps a tree within
// it and Decode refuses to decompress past it: a small payload of well-compressing bytes
// (a zip bomb) must not cost the hub its memory. The bound is far above what MaxTreeNodes
// nodes of ordinary size take, so it cuts only nodes with very long info and image lists.
const MaxTreeJSONBytes = 16 << 20

// Encode is tree as an ApplicationResourceTree carries it: the JSON of the tree, its
// digest and gzip compression, with at most MaxTreeNodes nodes, MaxTreeJSONBytes of JSON
// and MaxTreeCompressedBytes of compressed tree. A tree beyond those loses nodes until it
// fits, in the order of dropOrder (deepest children first, then orphaned nodes, the
// Application's own resources last); OmittedNodes counts them. ObservedAt is left to the
// caller. tree is not changed.
func Encode(tree *argov1alpha1.ApplicationTree) (appsv1alpha1.ResourceTreeData, error) {
	if tree == nil {
		tree = &argov1alpha1.ApplicationTree{}
	}
	order := dropOrder(tree)
	total := len(order)
	keep := min(total, appsv1alpha1.MaxTreeNodes)
	payload, err := encodeKeeping(tree, order, keep)
	if err != nil {
		return appsv1alpha1.ResourceTreeData{}, err
	}
	if !payload.fits() {
		// The largest number of nodes that fits, by bisection: compressed sizes grow with
		// the nodes kept (near enough that the result is checked, not assumed).
		fitting, err := encodeKeeping(tree, order, 0)
		if err != nil {
			return appsv1alpha1.ResourceTreeData{}, err
		}
		if !fitting.fits() {
			return appsv1alpha1.ResourceTreeData{}, fmt.Errorf("a resource tree without nodes takes %d bytes of JSON, %d compressed: over the bounds",
				len(fitting.json), len(fitting.compressed))
		}
		lo, hi := 0, keep // lo fits, hi does not
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			p, err := encodeKeeping(tree, order, mid)
			if err != nil {
				return appsv1alpha1.ResourceTreeData{}, err
			}
			if p.fits() {
				lo, fitting = mid, p
			} else {
				hi = mid
			}
		}
		payload, keep = fitting, lo
	}
	sum := sha256.Sum256(payload.json)
	return appsv1alpha1.ResourceTreeData{
		Digest:       hex.EncodeToString(sum[:]),
		Nodes:        int32(keep),
		OmittedNodes: int32(total - keep),
		Compressed:   payload.compressed,
	}, nil
}

// Decode is the tree data carries. It refuses data whose digest is not the one of its
// JSON, and JSON beyond MaxTreeJSONBytes.
func Decode(data *appsv1alpha1.ResourceTreeData) (*argov1alpha1.ApplicationTree, error) {
	if data == nil {
		return nil, errors.New("no resource tree")
	}
	zr, err := gzip.NewReader(bytes.NewReader(data.Compressed))
	if err != nil {
		return nil, fmt.Errorf("decompressing the resource tree: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, MaxTreeJSONBytes+1))
	if err != nil {
		return nil, fmt.Errorf("decompressing the resource tree: %w", err)
	}
	if len(raw) > MaxTreeJSONBytes {
		return nil, fmt.Errorf("the resource tree decompresses to more than %d bytes", MaxTreeJSONBytes)
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != data.Digest {
		return nil, fmt.Errorf("the resource tree's digest is %s, not the %s it claims", got, data.Digest)
	}
	tree := &argov1alpha1.ApplicationTree{}
	if err := json.Unmarshal(raw, tree); err != nil {
		return nil, fmt.Errorf("reading the resource tree's JSON: %w", err)
	}
	return tree, nil
}

// payload is a tree's JSON and its compression.
type payload struct {
	json       []byte
	compressed []byte
}

func (p payload) fits() bool {
	return len(p.json) <= MaxTreeJSONBytes && len(p.compressed) <= appsv1alpha1.MaxTreeCompressedBytes
}

// encodeKeeping encodes tree with the first keep nodes of order only, each list in the
// tree's own order. ShardsCount is how Argo CD split the tree in its cache, not part of
// the tree: it is left out.
func encodeKeeping(tree *argov1alpha1.ApplicationTree, order []nodeRef, keep int) (payload, error) {
	kept := make(map[nodeRef]bool, keep)
	for _, ref := range order[:keep] {
		kept[ref] = true
	}
	out := argov1alpha1.ApplicationTree{Hosts: tree.Hosts}
	for i, n := range tree.Nodes {
		if kept[nodeRef{index: i}] {
			out.Nodes = append(out.Nodes, n)
		}
	}
	for i, n := range tree.OrphanedNodes {
		if kept[nodeRef{orphaned: true, index: i}] {
			out.OrphanedNodes = append(out.OrphanedNodes, n)
		}
	}
	raw, err := json.Marshal(&out)
	if err != nil {
		return payload{}, fmt.Errorf("encoding the resource tree: %w", err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return payload{}, fmt.Errorf("compressing the resource tree: %w", err)
	}
	if err := zw.Close(); err != nil {
		return payload{}, fmt.Errorf("compressing the resource tree: %w", err)
	}
	return payload{json: raw, compressed: buf.Bytes()}, nil
}
