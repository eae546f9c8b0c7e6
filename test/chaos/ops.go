//go:build e2e

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/contract/pullmodel"
)

// opKind names an operation in the log and the figures.
type opKind string

const (
	opCreate       opKind = "create"
	opUpdate       opKind = "update"
	opRetarget     opKind = "retarget"
	opUnmark       opKind = "unmark"
	opRemark       opKind = "re-mark"
	opBreak        opKind = "break"
	opFix          opKind = "fix"
	opDelete       opKind = "delete"
	opSetUpdate    opKind = "update ApplicationSet"
	opSetBreak     opKind = "break ApplicationSet"
	opSetFix       opKind = "fix ApplicationSet"
	opSetDelete    opKind = "delete ApplicationSet"
	opSetCreate    opKind = "recreate ApplicationSet"
	opPlacementOut opKind = "cluster out of Placement"
	opPlacementIn  opKind = "cluster into Placement"
)

// maxStandalone bounds the live standalone Applications: enough for every operation to
// find a target, few enough for three clusters on two cores.
const maxStandalone = 6

// op is one chosen operation: what the log says, and the request(s) that do it.
type op struct {
	kind opKind
	desc string
	do   func(ctx context.Context) error
}

// weighted is a candidate operation kind with its weight; build makes the operation and
// changes the model.
type weighted struct {
	weight int
	build  func() op
}

// nextAppOp picks an application, ApplicationSet or Placement operation from what the
// model allows, with the seeded source only.
func (h *harness) nextAppOp() op {
	m := h.m
	live := m.live()
	var valid, settled, unmarked, broken []*standaloneApp
	for _, a := range live {
		switch {
		case a.broken != notBroken:
			broken = append(broken, a)
		case a.marked:
			valid = append(valid, a)
			if a.settled {
				settled = append(settled, a)
			}
		default:
			unmarked = append(unmarked, a)
		}
	}
	var setsValid, setsSettled, setsBroken, setsUp, setsDown []*appSet
	for _, s := range m.sets {
		switch {
		case !s.exists:
			setsDown = append(setsDown, s)
		case s.broken != notBroken:
			setsBroken = append(setsBroken, s)
		default:
			setsValid = append(setsValid, s)
			if s.settled {
				setsSettled = append(setsSettled, s)
			}
		}
		if s.exists {
			setsUp = append(setsUp, s)
		}
	}
	var included, excluded []string
	for _, c := range m.clusters {
		if m.excluded[c] {
			excluded = append(excluded, c)
		} else {
			included = append(included, c)
		}
	}

	var cands []weighted
	add := func(ok bool, weight int, build func() op) {
		if ok {
			cands = append(cands, weighted{weight, build})
		}
	}
	add(len(live) < maxStandalone, 3, h.createOp)
	add(len(valid) > 0, 4, func() op { return h.updateOp(pick(h, valid)) })
	add(len(valid) > 0, 2, func() op { return h.retargetOp(pick(h, valid)) })
	add(len(valid) > 0, 1, func() op { return h.unmarkOp(pick(h, valid)) })
	add(len(unmarked) > 0, 2, func() op { return h.remarkOp(pick(h, unmarked)) })
	add(len(settled) > 0, 2, func() op { return h.breakOp(pick(h, settled)) })
	add(len(broken) > 0, 3, func() op { return h.fixOp(pick(h, broken)) })
	add(len(live) > 0, 1+len(live)/3, func() op { return h.deleteOp(pick(h, live)) })
	add(len(setsValid) > 0, 2, func() op { return h.setUpdateOp(pick(h, setsValid)) })
	add(len(setsSettled) > 0, 1, func() op { return h.setBreakOp(pick(h, setsSettled)) })
	add(len(setsBroken) > 0, 2, func() op { return h.setFixOp(pick(h, setsBroken)) })
	add(len(setsUp) > 0, 1, func() op { return h.setDeleteOp(pick(h, setsUp)) })
	add(len(setsDown) > 0, 2, func() op { return h.setCreateOp(pick(h, setsDown)) })
	add(len(included) > 1, 1, func() op { return h.placementOp(pick(h, included), true) })
	add(len(excluded) > 0, 2, func() op { return h.placementOp(pick(h, excluded), false) })

	return h.pickWeighted(cands)
}

// pickWeighted builds one of cands, chosen by weight with the seeded source.
func (h *harness) pickWeighted(cands []weighted) op {
	total := 0
	for _, c := range cands {
		total += c.weight
	}
	n := h.rng.IntN(total)
	for _, c := range cands {
		if n < c.weight {
			return c.build()
		}
		n -= c.weight
	}
	panic("unreachable")
}

// pick is one of items, chosen by the seeded source.
func pick[T any](h *harness, items []T) T { return items[h.rng.IntN(len(items))] }

// otherThan is a random element of all but not.
func otherThan[T comparable](h *harness, all []T, not T) T {
	rest := slices.DeleteFunc(slices.Clone(all), func(x T) bool { return x == not })
	return pick(h, rest)
}

func (h *harness) createOp() op {
	m := h.m
	m.nextApp++
	a := &standaloneApp{
		name: fmt.Sprintf("s%03d", m.nextApp), cluster: pick(h, m.clusters), finalizer: h.rng.IntN(2) == 0,
		marked: true, src: source{rev: h.rng.IntN(revisions), path: pick(h, guestbookPaths)}, epoch: 1,
	}
	m.apps = append(m.apps, a)
	obj := h.standaloneObject(a)
	return op{opCreate, fmt.Sprintf("%s to %s, %s, finalizer %v", a.name, a.cluster, h.srcString(a.src), a.finalizer),
		func(ctx context.Context) error { return h.hub.Create(ctx, obj) }}
}

func (h *harness) updateOp(a *standaloneApp) op {
	a.settled = false
	was := a.src
	for a.src == was {
		a.src = source{rev: h.rng.IntN(revisions), path: pick(h, guestbookPaths)}
	}
	patch := map[string]any{"spec": map[string]any{"source": map[string]any{
		"targetRevision": h.revs[a.src.rev], "path": a.src.path,
	}}}
	return op{opUpdate, fmt.Sprintf("%s: %s -> %s", a.name, h.srcString(was), h.srcString(a.src)), h.patchApp(a.name, patch)}
}

func (h *harness) retargetOp(a *standaloneApp) op {
	a.settled = false
	was := a.cluster
	a.cluster = otherThan(h, h.m.clusters, was)
	a.epoch++
	return op{opRetarget, fmt.Sprintf("%s: %s -> %s", a.name, was, a.cluster),
		h.patchApp(a.name, annotations(apps.AnnotationOCMManagedCluster, a.cluster))}
}

func (h *harness) unmarkOp(a *standaloneApp) op {
	a.settled = false
	a.marked = false
	a.epoch++
	// Both ways of saying it: the label "false", or no label.
	var value any = "false"
	if h.rng.IntN(2) == 0 {
		value = nil
	}
	return op{opUnmark, fmt.Sprintf("%s (label %v)", a.name, value), h.patchApp(a.name, labels(apps.LabelPullToOCMManagedCluster, value))}
}

func (h *harness) remarkOp(a *standaloneApp) op {
	a.settled = false
	a.marked = true
	a.epoch++
	return op{opRemark, a.name + " to " + a.cluster, h.patchApp(a.name, labels(apps.LabelPullToOCMManagedCluster, "true"))}
}

func (h *harness) breakOp(a *standaloneApp) op {
	a.settled = false
	a.broken = pick(h, breakKinds)
	var patch map[string]any
	switch a.broken {
	case breakLabel:
		patch = labels(apps.LabelPullToOCMManagedCluster, "True")
	case breakServer:
		patch = annotations(apps.AnnotationDestinationServer, "kubernetes.default.svc")
	case breakCluster:
		patch = annotations(apps.AnnotationOCMManagedCluster, a.cluster+"0")
	case breakProject:
		patch = map[string]any{"spec": map[string]any{"project": project + "-typo"}}
	}
	return op{opBreak, fmt.Sprintf("%s: %s", a.name, a.broken), h.patchApp(a.name, patch)}
}

func (h *harness) fixOp(a *standaloneApp) op {
	a.settled = false
	was := a.broken
	a.broken = notBroken
	var patch map[string]any
	switch was {
	case breakLabel:
		patch = labels(apps.LabelPullToOCMManagedCluster, "true")
	case breakServer:
		patch = annotations(apps.AnnotationDestinationServer, nil)
	case breakCluster:
		patch = annotations(apps.AnnotationOCMManagedCluster, a.cluster)
	case breakProject:
		patch = map[string]any{"spec": map[string]any{"project": project}}
	}
	return op{opFix, fmt.Sprintf("%s: %s", a.name, was), h.patchApp(a.name, patch)}
}

func (h *harness) deleteOp(a *standaloneApp) op {
	a.deleted = true
	return op{opDelete, fmt.Sprintf("%s (finalizer %v, marked %v, broken %q)", a.name, a.finalizer, a.marked, a.broken),
		func(ctx context.Context) error {
			app := &unstructured.Unstructured{}
			app.SetGroupVersionKind(applicationGVK)
			app.SetNamespace(argoNS)
			app.SetName(a.name)
			return client.IgnoreNotFound(h.hub.Delete(ctx, app))
		}}
}

func (h *harness) setUpdateOp(s *appSet) op {
	s.settled = false
	was := s.src
	for s.src == was {
		s.src = source{rev: h.rng.IntN(revisions), path: pick(h, guestbookPaths)}
	}
	patch := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"source": map[string]any{"targetRevision": h.revs[s.src.rev], "path": s.src.path},
	}}}}
	return op{opSetUpdate, fmt.Sprintf("%s: %s -> %s", s.name, h.srcString(was), h.srcString(s.src)), func(ctx context.Context) error {
		return h.patch(ctx, appSetGVK, s.name, patch)
	}}
}

// templateBreakKinds are the typos that reach the Applications an ApplicationSet renders:
// Argo CD's applicationset-controller refuses a template naming an AppProject that does
// not exist itself (a condition on the ApplicationSet), and leaves its Applications as
// they were.
var templateBreakKinds = []breakKind{breakLabel, breakServer, breakCluster}

// setBreakOp makes a typo of the bad-input table in the set's template: every
// Application it renders has it.
func (h *harness) setBreakOp(s *appSet) op {
	s.settled = false
	s.broken = pick(h, templateBreakKinds)
	return op{opSetBreak, fmt.Sprintf("%s: %s", s.name, s.broken), func(ctx context.Context) error {
		return h.patch(ctx, appSetGVK, s.name, templatePatch(s.broken, true))
	}}
}

func (h *harness) setFixOp(s *appSet) op {
	s.settled = false
	was := s.broken
	s.broken = notBroken
	return op{opSetFix, fmt.Sprintf("%s: %s", s.name, was), func(ctx context.Context) error {
		return h.patch(ctx, appSetGVK, s.name, templatePatch(was, false))
	}}
}

// templatePatch makes (or, with broken false, undoes) typo kind in an ApplicationSet's
// template.
func templatePatch(kind breakKind, broken bool) map[string]any {
	var meta, spec map[string]any
	switch kind {
	case breakLabel:
		meta = labels(apps.LabelPullToOCMManagedCluster, map[bool]any{true: "True", false: "true"}[broken])
	case breakServer:
		meta = annotations(apps.AnnotationDestinationServer, map[bool]any{true: "kubernetes.default.svc", false: nil}[broken])
	case breakCluster:
		meta = annotations(apps.AnnotationOCMManagedCluster, map[bool]any{true: "{{name}}0", false: "{{name}}"}[broken])
	case breakProject:
		spec = map[string]any{"project": map[bool]any{true: project + "-typo", false: project}[broken]}
	}
	template := map[string]any{}
	if meta != nil {
		template["metadata"] = meta["metadata"]
	}
	if spec != nil {
		template["spec"] = spec
	}
	return map[string]any{"spec": map[string]any{"template": template}}
}

func (h *harness) setDeleteOp(s *appSet) op {
	s.exists = false
	s.epoch++
	// Created again, it is created without the typo.
	s.broken = notBroken
	return op{opSetDelete, s.name, func(ctx context.Context) error {
		set := &unstructured.Unstructured{}
		set.SetGroupVersionKind(appSetGVK)
		set.SetNamespace(argoNS)
		set.SetName(s.name)
		return client.IgnoreNotFound(h.hub.Delete(ctx, set))
	}}
}

func (h *harness) setCreateOp(s *appSet) op {
	s.exists = true
	s.settled = false
	obj := h.appSetObject(s)
	return op{opSetCreate, fmt.Sprintf("%s at %s", s.name, h.srcString(s.src)), func(ctx context.Context) error {
		// The deleted set may still be on its way out (Argo CD's finalizers): create it
		// once it is gone.
		return waitFor(ctx, 2*time.Minute, "ApplicationSet "+s.name+" to be created again", func(ctx context.Context) (bool, error) {
			err := h.hub.Create(ctx, obj.DeepCopy())
			if apierrors.IsAlreadyExists(err) {
				return false, nil
			}
			return err == nil, err
		})
	}}
}

func (h *harness) placementOp(cluster string, out bool) op {
	kind := opPlacementIn
	var value any
	if out {
		kind, value = opPlacementOut, "true"
		h.m.excluded[cluster] = true
		h.m.placementEpochs[cluster]++
	} else {
		delete(h.m.excluded, cluster)
	}
	return op{kind, cluster, func(ctx context.Context) error {
		data, err := json.Marshal(labels(excludedLabel, value))
		if err != nil {
			return err
		}
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}
		return h.hub.Patch(ctx, mc, client.RawPatch(types.MergePatchType, data))
	}}
}

// standaloneObject is a's hub Application as a user writes it.
func (h *harness) standaloneObject(a *standaloneApp) *unstructured.Unstructured {
	app := &unstructured.Unstructured{Object: map[string]any{"spec": h.appSpec(a.src, a.name)}}
	app.SetGroupVersionKind(applicationGVK)
	app.SetNamespace(argoNS)
	app.SetName(a.name)
	app.SetLabels(map[string]string{apps.LabelPullToOCMManagedCluster: "true"})
	app.SetAnnotations(map[string]string{
		apps.AnnotationSkipReconcile:                 "true",
		apps.AnnotationOCMManagedCluster:             a.cluster,
		apps.AnnotationOCMManagedClusterAppNamespace: argoNS,
	})
	if a.finalizer {
		app.SetFinalizers([]string{pullmodel.ResourcesFinalizer})
	}
	return app
}

func (h *harness) srcString(s source) string { return fmt.Sprintf("revision %d at %s", s.rev, s.path) }

// patchApp merge-patches hub Application name.
func (h *harness) patchApp(name string, patch map[string]any) func(ctx context.Context) error {
	return func(ctx context.Context) error { return h.patch(ctx, applicationGVK, name, patch) }
}

func (h *harness) patch(ctx context.Context, gvk schema.GroupVersionKind, name string, patch map[string]any) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(argoNS)
	obj.SetName(name)
	return h.hub.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data))
}

func labels(key string, value any) map[string]any {
	return map[string]any{"metadata": map[string]any{"labels": map[string]any{key: value}}}
}

func annotations(key string, value any) map[string]any {
	return map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}}
}
