package addon

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultAgentImage is the agent's image when --agent-image is not given: the one image
// of the project, which holds both the manager and the agent.
const DefaultAgentImage = "quay.io/open-cluster-management/argocd-pull-addon:latest"

// Options are the manager-wide defaults of the agent. An AddOnDeploymentConfig attached to
// the ClusterManagementAddOn or to one ManagedClusterAddOn overrides them per cluster.
type Options struct {
	// AgentImage is the agent's image before registry mirroring.
	AgentImage string
	// AgentImagePullPolicy is the agent container's image pull policy.
	AgentImagePullPolicy corev1.PullPolicy
	// AgentImagePullSecrets name the Secrets the agent's Pod pulls its image with. Each must
	// exist in the agent's install namespace on every managed cluster; the klusterlet copies
	// its open-cluster-management-image-pull-credentials there (the agent chart labels the
	// namespace for it).
	AgentImagePullSecrets []string
	// WatchNamespaces are the managed-cluster namespaces whose Argo CD Applications the
	// agent reports.
	WatchNamespaces []string
	// LogLevel is the agent's klog verbosity (--v).
	LogLevel int
	// AgentReportQuota is how many ApplicationStatusReports a cluster's namespace may hold
	// (a ResourceQuota per cluster namespace): the most Applications one cluster reports,
	// plus headroom.
	AgentReportQuota int
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		AgentImage:           DefaultAgentImage,
		AgentImagePullPolicy: corev1.PullIfNotPresent,
		WatchNamespaces:      []string{"argocd"},
		LogLevel:             2,
		AgentReportQuota:     DefaultAgentReportQuota,
	}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.AgentImage, "agent-image", o.AgentImage,
		"Image of the argocd-pull agent the addon installs on managed clusters (AddOnDeploymentConfig registries mirror it).")
	fs.StringVar((*string)(&o.AgentImagePullPolicy), "agent-image-pull-policy", string(o.AgentImagePullPolicy),
		"Pull policy of the agent image: Always, IfNotPresent or Never.")
	fs.StringSliceVar(&o.AgentImagePullSecrets, "agent-image-pull-secrets", o.AgentImagePullSecrets,
		"Secrets in the agent's install namespace on each managed cluster that the agent's Pod pulls its image with (imagePullSecrets), "+
			"e.g. open-cluster-management-image-pull-credentials, which the klusterlet copies there.")
	fs.StringSliceVar(&o.WatchNamespaces, "agent-watch-namespaces", o.WatchNamespaces,
		"Default managed-cluster namespaces whose Argo CD Applications the agent reports (AddOnDeploymentConfig customizedVariable "+
			VariableWatchNamespaces+" overrides it).")
	fs.IntVar(&o.LogLevel, "agent-log-level", o.LogLevel,
		"Default klog verbosity of the agent (AddOnDeploymentConfig customizedVariable "+VariableLogLevel+" overrides it).")
	fs.IntVar(&o.AgentReportQuota, "agent-report-quota", o.AgentReportQuota,
		"How many ApplicationStatusReports, and as many ApplicationResourceTrees, each cluster's namespace may hold (a ResourceQuota "+
			"the addon writes there): the most Applications one managed cluster's Argo CD runs from the hub, plus headroom. A report past it is refused.")
}

// Validate reports options the agent could not run with.
func (o *Options) Validate() error {
	var errs []error
	if o.AgentImage == "" {
		errs = append(errs, errors.New("--agent-image must not be empty"))
	}
	switch o.AgentImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		errs = append(errs, fmt.Errorf("--agent-image-pull-policy %q is not Always, IfNotPresent or Never", o.AgentImagePullPolicy))
	}
	for _, secret := range o.AgentImagePullSecrets {
		if msgs := validation.IsDNS1123Subdomain(secret); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--agent-image-pull-secrets: %q is not a Secret name: %s", secret, strings.Join(msgs, "; ")))
		}
	}
	if _, err := parseWatchNamespaces(o.WatchNamespaces); err != nil {
		errs = append(errs, fmt.Errorf("--agent-watch-namespaces: %w", err))
	}
	if o.AgentReportQuota < 1 {
		errs = append(errs, fmt.Errorf("--agent-report-quota %d is not a positive number of reports", o.AgentReportQuota))
	}
	if err := validateLogLevel(o.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("--agent-log-level: %w", err))
	}
	return errors.Join(errs...)
}
