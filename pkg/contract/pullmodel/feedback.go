package pullmodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"

	argoapp "github.com/argoproj/argo-cd/v2/pkg/apis/application"
	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Names of the status feedback values the work agent reads from the spoke Application.
// FeedbackRules declares one JSONPath per name; ScalarsFromFeedback reads them back.
const (
	FeedbackHealthStatus            = "healthStatus"
	FeedbackSyncStatus              = "syncStatus"
	FeedbackOperationStatePhase     = "operationStatePhase"
	FeedbackOperationStateStartedAt = "operationStateStartedAt"
	FeedbackSyncRevision            = "syncRevision"
	// FeedbackOperationDelivered and FeedbackRefreshDelivered are the ids of the last hub
	// requests the agent set on the spoke Application (DeliveredFromFeedback).
	FeedbackOperationDelivered = "operationDelivered"
	FeedbackRefreshDelivered   = "refreshDelivered"
)

// scalarPaths and deliveredPaths are the JSONPaths of each feedback value in the spoke
// Application: what ScalarsFromFeedback reads, and what DeliveredFromFeedback reads.
var (
	scalarPaths = []workv1.JsonPath{
		{Name: FeedbackHealthStatus, Path: ".status.health.status"},
		{Name: FeedbackSyncStatus, Path: ".status.sync.status"},
		{Name: FeedbackOperationStatePhase, Path: ".status.operationState.phase"},
		{Name: FeedbackOperationStateStartedAt, Path: ".status.operationState.startedAt"},
		{Name: FeedbackSyncRevision, Path: ".status.sync.revision"},
	}
	deliveredPaths = []workv1.JsonPath{
		{Name: FeedbackOperationDelivered, Path: annotationPath(apps.AnnotationOperationDelivered)},
		{Name: FeedbackRefreshDelivered, Path: annotationPath(apps.AnnotationRefreshDelivered)},
	}
)

// annotationPath is the JSONPath of annotation key: Kubernetes JSONPath needs the dots
// inside a key escaped.
func annotationPath(key string) string {
	return ".metadata.annotations." + strings.ReplaceAll(key, ".", `\.`)
}

// FeedbackRules are the status feedback rules of the Application manifest of a pulled
// ManifestWork.
func FeedbackRules() []workv1.FeedbackRule {
	return []workv1.FeedbackRule{{
		Type:      workv1.JSONPathsType,
		JsonPaths: slices.Concat(scalarPaths, deliveredPaths),
	}}
}

// Scalars are the five values of an Argo CD ApplicationStatus that both sources of a
// pulled Application's state carry: the ManifestWork's status feedback and the agent's
// report. A nil field means the source did not carry that value (the JSONPath found nothing
// on the spoke, the value was malformed, the report left it empty): the reader keeps what
// it has.
type Scalars struct {
	Health             *health.HealthStatusCode
	Sync               *argov1alpha1.SyncStatusCode
	Revision           *string
	OperationPhase     *synccommon.OperationPhase
	OperationStartedAt *metav1.Time
}

// IsEmpty tells whether s carries no value at all.
func (s Scalars) IsEmpty() bool {
	return s == Scalars{}
}

// ApplicationFeedback returns the status feedback values the work agent reported for the
// Argo CD Application manifest of mw, and whether mw reports that manifest at all.
// Feedback of any other manifest does not count.
func ApplicationFeedback(mw *workv1.ManifestWork) ([]workv1.FeedbackValue, bool) {
	if m := applicationManifest(mw); m != nil {
		return m.StatusFeedbacks.Values, true
	}
	return nil, false
}

func isApplicationManifest(meta workv1.ManifestResourceMeta) bool {
	if meta.Group != argoapp.Group {
		return false
	}
	return meta.Resource == argoapp.ApplicationPlural || (meta.Resource == "" && meta.Kind == argoapp.ApplicationKind)
}

// FeedbackChanged tells whether the Application manifest's feedback differs between two
// versions of a ManifestWork: the work agent rewrites conditions and observed generations
// far more often than the spoke Application's status moves.
func FeedbackChanged(oldWork, newWork *workv1.ManifestWork) bool {
	oldValues, _ := ApplicationFeedback(oldWork)
	newValues, _ := ApplicationFeedback(newWork)
	return !equality.Semantic.DeepEqual(oldValues, newValues)
}

// ScalarsFromFeedback reads feedback values into the scalars they determine. Unknown
// names are skipped. A value of an unexpected type or a start time that is not RFC 3339 is
// left out and reported in the returned error (the caller logs it); the other values still
// count.
func ScalarsFromFeedback(values []workv1.FeedbackValue) (Scalars, error) {
	var (
		s    Scalars
		errs []error
	)
	for _, v := range values {
		if !scalarFeedback(v.Name) {
			continue
		}
		str, err := stringValue(v.Value)
		if err != nil {
			errs = append(errs, fmt.Errorf("feedback value %q: %w", v.Name, err))
			continue
		}
		switch v.Name {
		case FeedbackHealthStatus:
			h := health.HealthStatusCode(str)
			s.Health = &h
		case FeedbackSyncStatus:
			c := argov1alpha1.SyncStatusCode(str)
			s.Sync = &c
		case FeedbackSyncRevision:
			s.Revision = &str
		case FeedbackOperationStatePhase:
			p := synccommon.OperationPhase(str)
			s.OperationPhase = &p
		case FeedbackOperationStateStartedAt:
			t, err := time.Parse(time.RFC3339, str)
			if err != nil {
				errs = append(errs, fmt.Errorf("feedback value %q is not an RFC 3339 time: %w", v.Name, err))
				continue
			}
			mt := metav1.NewTime(t)
			s.OperationStartedAt = &mt
		}
	}
	return s, errors.Join(errs...)
}

// Delivered are the ids of the last hub requests the agent set on the spoke Application,
// as the ManifestWork's status feedback shows them: the spoke's acknowledgement, after
// which the hub clears the request. Empty when the feedback has none.
type Delivered struct {
	Operation string
	Refresh   string
}

// DeliveredFromFeedback reads the delivered request ids from feedback values. A value of
// an unexpected type counts as none: the hub then keeps its request, which the agent
// never runs twice.
func DeliveredFromFeedback(values []workv1.FeedbackValue) Delivered {
	var d Delivered
	for _, v := range values {
		str, err := stringValue(v.Value)
		if err != nil {
			continue
		}
		switch v.Name {
		case FeedbackOperationDelivered:
			d.Operation = str
		case FeedbackRefreshDelivered:
			d.Refresh = str
		}
	}
	return d
}

func scalarFeedback(name string) bool {
	return slices.ContainsFunc(scalarPaths, func(p workv1.JsonPath) bool { return p.Name == name })
}

// stringValue reads a feedback value that must be a string. The work agent reports JSONPath
// results that are strings as type String; a JSON string in JsonRaw is accepted too.
func stringValue(v workv1.FieldValue) (string, error) {
	switch v.Type {
	case workv1.String:
		if v.String == nil {
			return "", errors.New("type String without a string")
		}
		return *v.String, nil
	case workv1.JsonRaw:
		if v.JsonRaw == nil {
			return "", errors.New("type JsonRaw without a value")
		}
		var s string
		if err := json.Unmarshal([]byte(*v.JsonRaw), &s); err != nil {
			return "", fmt.Errorf("JsonRaw value is not a JSON string: %w", err)
		}
		return s, nil
	default:
		return "", fmt.Errorf("type %q, want String", v.Type)
	}
}
