package addon

import (
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	cacheutil "github.com/argoproj/argo-cd/v2/util/cache"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"open-cluster-management.io/addon-framework/pkg/addonfactory"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// AddOnDeploymentConfig customizedVariables the agent understands, each passed by the
// agent chart to the agent flag docs/configuring-agents.md names beside it. Other
// variables are ignored, so a shared AddOnDeploymentConfig cannot overwrite unrelated
// chart values. A variable left out keeps the agent flag's default, except those the
// manager sets by default (watchNamespaces and logLevel from its flags, argocdNamespace).
const (
	// VariableWatchNamespaces is a comma-separated list of the namespaces whose
	// Applications the agent reports, e.g. "argocd,openshift-gitops".
	VariableWatchNamespaces = "watchNamespaces"
	// VariableLogLevel is the agent's klog verbosity, 0 to 10.
	VariableLogLevel = "logLevel"
	// VariableLoggingFormat is the agent's log format: text or json.
	VariableLoggingFormat = "loggingFormat"
	// VariableArgoCDNamespace is the namespace of the cluster's Argo CD: its application
	// controller's, and the home of the Redis Secret the agent reads.
	VariableArgoCDNamespace = "argocdNamespace"
	// VariableRedisAddress is Argo CD's Redis as host:port, when not its Service
	// argocd-redis.<argocdNamespace>.svc:6379.
	VariableRedisAddress = "redisAddress"
	// VariableRedisSecret names the Secret in argocdNamespace holding Argo CD's Redis
	// password (key auth), when not Argo CD's own argocd-redis.
	VariableRedisSecret = "redisSecret"
	// VariableRedisCompression is how Argo CD compresses its Redis cache (its
	// --redis-compress): gzip or none.
	VariableRedisCompression = "redisCompression"
	// VariableKubeAPIQPS and VariableKubeAPIBurst bound the agent's requests to its
	// managed cluster's API server.
	VariableKubeAPIQPS   = "kubeAPIQPS"
	VariableKubeAPIBurst = "kubeAPIBurst"
	// VariableHubKubeAPIQPS and VariableHubKubeAPIBurst bound the agent's requests to
	// the hub.
	VariableHubKubeAPIQPS   = "hubKubeAPIQPS"
	VariableHubKubeAPIBurst = "hubKubeAPIBurst"
	// VariableHubReconnectJitter is the most the agent waits, at random, after the hub
	// answers again before it retries what waited for it: a Go duration such as 30s.
	VariableHubReconnectJitter = "hubReconnectJitter"
	// VariableResourceTrees switches the agent's ApplicationResourceTrees on or off: true
	// or false.
	VariableResourceTrees = "resourceTrees"
	// VariableResourceTreeInterval is the least time between two writes of one
	// Application's resource tree: a Go duration such as 10s.
	VariableResourceTreeInterval = "resourceTreeInterval"
)

// maxHubReconnectJitter bounds hubReconnectJitter: the agent's own backoff retries a
// failed write within two minutes anyway, so a longer wait only delays the hub's view,
// and a value of hours is a typo.
const maxHubReconnectJitter = 10 * time.Minute

// minResourceTreeInterval and maxResourceTreeInterval bound resourceTreeInterval: below
// a second the agent would write a tree per change of a busy Application, above ten
// minutes the hub's tree is too old to act on, and hours are a typo.
const (
	minResourceTreeInterval = time.Second
	maxResourceTreeInterval = 10 * time.Minute
)

// agentImageKey is where the chart reads the agent image; the framework's image helpers
// write the mirrored image there.
const agentImageKey = "global.imageOverrides.agent"

// defaultArgoCDNamespace is where Argo CD's installation puts it.
const defaultArgoCDNamespace = "argocd"

// maxLogLevel bounds --v: klog accepts any number, but above 10 nothing more is logged.
const maxLogLevel = 10

// AgentValues are the values of the agent chart (manifests/charts/argocd-pull-agent)
// that the manager sets. The chart's built-in values (clusterName, addonInstallNamespace,
// hubKubeConfigSecret) come from addon-framework. Field shapes follow the framework's
// AddOnDeploymentConfig helpers so their output merges over these defaults.
type AgentValues struct {
	// WatchNamespaces are the namespaces whose Applications the agent reports.
	WatchNamespaces []string `json:"watchNamespaces"`
	// LogLevel is the agent's --v.
	LogLevel int `json:"logLevel"`
	// ArgoCDNamespace is the agent's --argocd-namespace.
	ArgoCDNamespace string `json:"argocdNamespace"`
	// RedisAddress is the agent's --redis-address; empty: Argo CD's Service.
	RedisAddress string `json:"redisAddress"`
	// The agent settings below come only from the AddOnDeploymentConfig; unset (the
	// chart then passes no flag) they keep the agent's defaults.
	RedisSecret        string  `json:"redisSecret,omitempty"`
	RedisCompression   string  `json:"redisCompression,omitempty"`
	KubeAPIQPS         float64 `json:"kubeAPIQPS,omitempty"`
	KubeAPIBurst       int     `json:"kubeAPIBurst,omitempty"`
	HubKubeAPIQPS      float64 `json:"hubKubeAPIQPS,omitempty"`
	HubKubeAPIBurst    int     `json:"hubKubeAPIBurst,omitempty"`
	HubReconnectJitter string  `json:"hubReconnectJitter,omitempty"`
	// ResourceTrees is "true" or "false": a string, so that false passes a flag too.
	ResourceTrees        string `json:"resourceTrees,omitempty"`
	ResourceTreeInterval string `json:"resourceTreeInterval,omitempty"`
	// Tolerations come from AddOnDeploymentConfig nodePlacement (ToAddOnNodePlacementValues).
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	Global      GlobalValues        `json:"global"`
}

// GlobalValues is the `global` block of the agent chart's values.
type GlobalValues struct {
	ImageOverrides  ImageOverrides    `json:"imageOverrides"`
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy"`
	// ImagePullSecrets are the agent Pod's imagePullSecrets (--agent-image-pull-secrets).
	// addon-framework has no helper for them and AddOnDeploymentConfig no field: they sit
	// in global beside the image, as in the framework's helloworld_helm example chart.
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// NodeSelector comes from AddOnDeploymentConfig nodePlacement.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// ProxyConfig comes from AddOnDeploymentConfig proxyConfig, keyed HTTP_PROXY,
	// HTTPS_PROXY, NO_PROXY (ToAddOnProxyConfigValues).
	ProxyConfig map[string]string `json:"proxyConfig,omitempty"`
	// ResourceRequirements come from AddOnDeploymentConfig resourceRequirements; the entry
	// matching container ID deployments:argocd-pull-agent:agent applies.
	ResourceRequirements []addonfactory.RegexResourceRequirements `json:"resourceRequirements,omitempty"`
}

// ImageOverrides holds the images of the chart after registry mirroring.
type ImageOverrides struct {
	Agent string `json:"agent"`
}

// defaultValues renders the manager-wide defaults; the AddOnDeploymentConfig helpers
// merge over them.
func (o *Options) defaultValues() addonfactory.GetValuesFunc {
	values := AgentValues{
		WatchNamespaces: slices.Clone(o.WatchNamespaces),
		LogLevel:        o.LogLevel,
		ArgoCDNamespace: defaultArgoCDNamespace,
		Global: GlobalValues{
			ImageOverrides:   ImageOverrides{Agent: o.AgentImage},
			ImagePullPolicy:  o.AgentImagePullPolicy,
			ImagePullSecrets: localObjectReferences(o.AgentImagePullSecrets),
		},
	}
	return func(*clusterv1.ManagedCluster, *addonv1alpha1.ManagedClusterAddOn) (addonfactory.Values, error) {
		v, err := addonfactory.JsonStructToValues(values)
		if err != nil {
			return nil, fmt.Errorf("converting the agent's default values: %w", err)
		}
		return v, nil
	}
}

func localObjectReferences(names []string) []corev1.LocalObjectReference {
	var refs []corev1.LocalObjectReference
	for _, name := range names {
		refs = append(refs, corev1.LocalObjectReference{Name: name})
	}
	return refs
}

// getValuesFuncs are the agent chart's value sources, later ones overriding earlier ones:
// the manager's defaults, then the desired AddOnDeploymentConfig of the addon (image
// mirrors, also from the cluster's image-registries annotation; node placement; proxy;
// resources; agent settings).
func (o *Options) getValuesFuncs(getter utils.AddOnDeploymentConfigGetter) []addonfactory.GetValuesFunc {
	return []addonfactory.GetValuesFunc{
		o.defaultValues(),
		addonfactory.GetAgentImageValues(getter, agentImageKey, o.AgentImage),
		addonfactory.GetAddOnDeploymentConfigValues(getter,
			addonfactory.ToAddOnNodePlacementValues,
			addonfactory.ToAddOnProxyConfigValues,
			addonfactory.ToAddOnResourceRequirementsValues,
			toAgentSettingsValues,
		),
	}
}

// toAgentSettingsValues reads the agent settings from the config's customizedVariables,
// each into the chart value of its name. An invalid value fails the rendering (and is
// reported on the ManagedClusterAddOn) rather than shipping an agent that cannot start.
func toAgentSettingsValues(config addonv1alpha1.AddOnDeploymentConfig) (addonfactory.Values, error) {
	settings := map[string]any{}
	var errs []error
	for _, variable := range config.Spec.CustomizedVariables {
		parse, ok := agentVariables[variable.Name]
		if !ok {
			continue
		}
		value, err := parse(strings.TrimSpace(variable.Value))
		if err != nil {
			errs = append(errs, fmt.Errorf("customizedVariable %s %q: %w", variable.Name, variable.Value, err))
			continue
		}
		settings[variable.Name] = value
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("AddOnDeploymentConfig %s/%s: %w", config.Namespace, config.Name, err)
	}
	return addonfactory.JsonStructToValues(settings)
}

// agentVariables read and check each variable's value (trimmed) into its chart value.
var agentVariables = map[string]func(string) (any, error){
	VariableWatchNamespaces: func(v string) (any, error) { return parseWatchNamespaces(strings.Split(v, ",")) },
	VariableLogLevel: func(v string) (any, error) {
		level, err := strconv.Atoi(v)
		if err != nil {
			return nil, errors.New("not a whole number")
		}
		return level, validateLogLevel(level)
	},
	VariableLoggingFormat: func(v string) (any, error) {
		// The formats the agent's component-base logging registers (pkg/cli).
		if v != "text" && v != "json" {
			return nil, errors.New("not text or json")
		}
		return v, nil
	},
	VariableArgoCDNamespace: func(v string) (any, error) {
		return v, nameError("a namespace name", validation.IsDNS1123Label(v))
	},
	VariableRedisAddress: func(v string) (any, error) {
		if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
			return nil, errors.New("not host:port")
		}
		return v, nil
	},
	VariableRedisSecret: func(v string) (any, error) {
		return v, nameError("a Secret name", validation.IsDNS1123Subdomain(v))
	},
	VariableRedisCompression: func(v string) (any, error) {
		if _, err := cacheutil.CompressionTypeFromString(v); err != nil {
			return nil, fmt.Errorf("not gzip or none: %w", err)
		}
		return v, nil
	},
	VariableKubeAPIQPS:         parseQPS,
	VariableKubeAPIBurst:       parseBurst,
	VariableHubKubeAPIQPS:      parseQPS,
	VariableHubKubeAPIBurst:    parseBurst,
	VariableHubReconnectJitter: parseHubReconnectJitter,
	VariableResourceTrees: func(v string) (any, error) {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return nil, errors.New("not true or false")
		}
		return strconv.FormatBool(on), nil
	},
	VariableResourceTreeInterval: parseResourceTreeInterval,
}

func nameError(what string, msgs []string) error {
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("not %s: %s", what, strings.Join(msgs, "; "))
}

// parseQPS reads requests per second as the agent's float32 flag takes them.
func parseQPS(v string) (any, error) {
	qps, err := strconv.ParseFloat(v, 64)
	if _, err32 := strconv.ParseFloat(v, 32); err != nil || err32 != nil || !(qps > 0) || math.IsInf(qps, 0) {
		return nil, errors.New("not a positive number of requests per second")
	}
	return qps, nil
}

func parseBurst(v string) (any, error) {
	burst, err := strconv.Atoi(v)
	if err != nil || burst < 1 {
		return nil, errors.New("not a positive whole number of requests")
	}
	return burst, nil
}

func parseHubReconnectJitter(v string) (any, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > maxHubReconnectJitter {
		return nil, fmt.Errorf("not a duration from 0s to %s", maxHubReconnectJitter)
	}
	return d.String(), nil
}

func parseResourceTreeInterval(v string) (any, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < minResourceTreeInterval || d > maxResourceTreeInterval {
		return nil, fmt.Errorf("not a duration from %s to %s", minResourceTreeInterval, maxResourceTreeInterval)
	}
	return d.String(), nil
}

// parseWatchNamespaces trims, de-duplicates and validates a list of namespace names.
func parseWatchNamespaces(names []string) ([]string, error) {
	var namespaces []string
	var errs []error
	for _, name := range names {
		name = strings.TrimSpace(name)
		if name == "" || slices.Contains(namespaces, name) {
			continue
		}
		if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%q is not a namespace name: %s", name, strings.Join(msgs, "; ")))
			continue
		}
		namespaces = append(namespaces, name)
	}
	if len(errs) == 0 && len(namespaces) == 0 {
		errs = append(errs, errors.New("no namespace given"))
	}
	return namespaces, errors.Join(errs...)
}

func validateLogLevel(level int) error {
	if level < 0 || level > maxLogLevel {
		return fmt.Errorf("log level %d is outside 0..%d", level, maxLogLevel)
	}
	return nil
}

// agentInstallNamespace picks the agent's namespace from the addon's AddOnDeploymentConfig
// when it names a non-default one. The CRD defaults spec.agentInstallNamespace to
// open-cluster-management-agent-addon, so any config (say, one that only sets a node
// selector) would otherwise send every agent back to the default namespace and silently
// override ManagedClusterAddOn spec.installNamespace (`clusteradm addon enable
// --namespace`). An empty result lets the framework use spec.installNamespace, then its
// default.
func agentInstallNamespace(getter utils.AddOnDeploymentConfigGetter) func(*addonv1alpha1.ManagedClusterAddOn) (string, error) {
	fromConfig := utils.AgentInstallNamespaceFromDeploymentConfigFunc(getter)
	return func(addon *addonv1alpha1.ManagedClusterAddOn) (string, error) {
		namespace, err := fromConfig(addon)
		if err != nil {
			return "", fmt.Errorf("reading the agent install namespace of ManagedClusterAddOn %s/%s: %w", addon.Namespace, addon.Name, err)
		}
		if namespace == addonfactory.AddonDefaultInstallNamespace {
			return "", nil
		}
		return namespace, nil
	}
}
