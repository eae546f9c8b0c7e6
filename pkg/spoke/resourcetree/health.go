package resourcetree

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/spoke/internal/phrase"
)

// HealthSources follow where the cluster's Argo CD keeps per-resource health, as
// the pulled Applications the report controller sees say it (status.resourceHealthSource,
// which their reports carry). The agent cannot read argocd-cmd-params-cm, and need not:
// the Applications say what the setting did. Only Applications Argo CD has reconciled
// count (status.reconciledAt set): a new one says nothing yet, and its empty source would
// read as "persisted".
type HealthSources struct {
	mu sync.Mutex
	// inTree maps each reconciled pulled Application that says appTree to the namespace
	// of the application controller that reconciled it, where the setting lives;
	// controllers counts them by that namespace, so a change costs no pass over them all.
	inTree      map[types.NamespacedName]string
	controllers map[string]int
	// persisted are the reconciled pulled Applications that hold their resources' health.
	persisted map[types.NamespacedName]bool
	// changed gets an event when the condition they make changes: the environment
	// controller, which writes the ManagedClusterAddOn's conditions, watches it.
	changed chan event.GenericEvent
}

// NewHealthSources knows no Application yet.
func NewHealthSources() *HealthSources {
	return &HealthSources{
		inTree:      map[types.NamespacedName]string{},
		controllers: map[string]int{},
		persisted:   map[types.NamespacedName]bool{},
		// One pending event is enough: the environment controller reads the condition
		// when it reconciles, not from the event.
		changed: make(chan event.GenericEvent, 1),
	}
}

// Observe records the Application key as app shows it; nil forgets it (deleted, or not
// reported any more).
func (s *HealthSources) Observe(key types.NamespacedName, app *argov1alpha1.Application) {
	s.mu.Lock()
	before := s.conditionLocked()
	if controller, ok := s.inTree[key]; ok {
		delete(s.inTree, key)
		if s.controllers[controller]--; s.controllers[controller] == 0 {
			delete(s.controllers, controller)
		}
	}
	delete(s.persisted, key)
	if app != nil && app.Status.ReconciledAt != nil {
		if app.Status.ResourceHealthSource == argov1alpha1.ResourceHealthLocationAppTree {
			controller := app.Status.ControllerNamespace
			if controller == "" {
				controller = app.Namespace
			}
			s.inTree[key] = controller
			s.controllers[controller]++
		} else {
			s.persisted[key] = true
		}
	}
	after := s.conditionLocked()
	s.mu.Unlock()
	signalChange(s.changed, before, after)
}

// Condition is the ResourceHealthPersisted condition the Applications seen so far make;
// nil while none has told.
func (s *HealthSources) Condition() *metav1.Condition {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conditionLocked()
}

// Changed gets an event when the condition changes.
func (s *HealthSources) Changed() <-chan event.GenericEvent { return s.changed }

func (s *HealthSources) conditionLocked() *metav1.Condition {
	return resourceHealthPersistedCondition(slices.Sorted(maps.Keys(s.controllers)), len(s.persisted))
}

// resourceHealthPersistedCondition is the ManagedClusterAddOn condition for reconciled
// pulled Applications: inTreeControllers are the namespaces of the application
// controllers whose Applications keep resource health in the resource tree, persisted
// how many hold it. One Application without it is enough for False: its report lacks
// what the user looks for. Nil when no Application has told.
func resourceHealthPersistedCondition(inTreeControllers []string, persisted int) *metav1.Condition {
	cond := &metav1.Condition{Type: apps.ConditionResourceHealthPersisted}
	switch {
	case len(inTreeControllers) > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, apps.ReasonResourceHealthInResourceTree
		cond.Message = fmt.Sprintf("Argo CD keeps per-resource health out of the Applications (resourceHealthSource: appTree, "+
			"Argo CD 3's default), so the agent reads it from Argo CD's resource tree in Redis (condition ResourceTreeReadable "+
			"says whether it can). To keep it in the Applications, "+
			`set controller.resource.health.persist: "true" in the argocd-cmd-params-cm ConfigMap in %s and restart the `+
			"application controller.", phrase.Namespaces(inTreeControllers))
	case persisted > 0:
		cond.Status, cond.Reason = metav1.ConditionTrue, apps.ReasonResourceHealthPersisted
		cond.Message = "Argo CD keeps per-resource health in the Applications: reports carry each resource's health."
	default:
		return nil
	}
	return cond
}
