// Package cmp is the Argo CD Config Management Plugin of hub-rendered delivery: it turns
// the manifests of an Application's source path into one ManifestWork for the target
// cluster, which the hub's Argo CD then applies into that cluster's namespace on the hub
// and OCM's work agent applies on the managed cluster. No Argo CD runs on that cluster.
//
// Everything here is pure except Render, which reads the source directory and may run
// kustomize or helm.
package cmp

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/internal/naming"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Variables of the environment Argo CD (v3) gives a CMP's generate command, set by the
// repo server (reposerver/repository/repository.go newEnv and getPluginEnvs). Plugin env
// entries of the Application (spec.source.plugin.env) arrive prefixed with ARGOCD_ENV_.
const (
	// EnvAppName is the Application's name, "<namespace>_<name>" when the Application
	// lives outside Argo CD's own namespace (apps in any namespace).
	EnvAppName = "ARGOCD_APP_NAME"
	// EnvAppNamespace is the Application's destination namespace, not the namespace the
	// Application lives in. For hub-rendered delivery it is the target cluster's
	// namespace on the hub.
	EnvAppNamespace = "ARGOCD_APP_NAMESPACE"
	// EnvAppRevision is the resolved revision being rendered.
	EnvAppRevision = "ARGOCD_APP_REVISION"
	// EnvAppSourcePath is the source path the manifests come from, relative to the
	// repository's root.
	EnvAppSourcePath = "ARGOCD_APP_SOURCE_PATH"

	// EnvCluster (plugin env CLUSTER) names the target cluster when the Application's
	// destination namespace is not the cluster's namespace.
	EnvCluster = "ARGOCD_ENV_CLUSTER"
	// EnvNamespace (plugin env NAMESPACE) is the namespace on the managed cluster that
	// namespaced objects without metadata.namespace go to, and helm's --namespace.
	EnvNamespace = "ARGOCD_ENV_NAMESPACE"
	// EnvHelmValues (plugin env HELM_VALUES) is a comma-separated list of values files,
	// relative to the source path, passed to helm template in order.
	EnvHelmValues = "ARGOCD_ENV_HELM_VALUES"

	// EnvArgoCDNamespace is Argo CD's own namespace on the hub. Argo CD does not pass it
	// to plugins; the sidecar sets it from the downward API (docs/cmp.md). It names the
	// hub Application's namespace when ARGOCD_APP_NAME carries none.
	EnvArgoCDNamespace = "ARGOCD_NAMESPACE"
)

// Environment is what the generate command needs from its environment.
type Environment struct {
	// AppName is the hub Application's name and AppNamespace its namespace ("" when
	// unknown), both read from ARGOCD_APP_NAME (and ARGOCD_NAMESPACE).
	AppName      string
	AppNamespace string
	// Cluster is the target managed cluster: the ManifestWork's namespace.
	Cluster string
	// Namespace is the default namespace of namespaced objects on the managed cluster;
	// "" means every namespaced object must name its own.
	Namespace string
	// Revision is the rendered revision, recorded on the ManifestWork.
	Revision string
	// HelmValues are values files passed to helm template, in order: paths relative to
	// the source path that stay inside the repository (checked when rendering).
	HelmValues []string
	// SourcePath is the source's path inside the repository (ARGOCD_APP_SOURCE_PATH); the
	// rendered directory minus it is the repository's root.
	SourcePath string

	// qualified is true when Argo CD named the Application "<namespace>_<name>", which
	// it does only for Applications outside its own namespace.
	qualified bool
}

// EnvironmentFrom reads the Environment through getenv (os.Getenv in the command) and
// checks it. The target cluster is ARGOCD_ENV_CLUSTER when set, otherwise the
// Application's destination namespace: a hub Application of hub-rendered delivery
// deploys its ManifestWork into the cluster's namespace on the hub.
func EnvironmentFrom(getenv func(string) string) (Environment, error) {
	env := Environment{
		Cluster:   strings.TrimSpace(getenv(EnvCluster)),
		Namespace: strings.TrimSpace(getenv(EnvNamespace)),
		Revision:  strings.TrimSpace(getenv(EnvAppRevision)),
	}
	appName := strings.TrimSpace(getenv(EnvAppName))
	if appName == "" {
		return Environment{}, fmt.Errorf("%s is not set: run this command as an Argo CD Config Management Plugin, or set it to the Application's name", EnvAppName)
	}
	// Argo CD writes "<namespace>_<name>" for Applications outside its own namespace.
	if ns, name, ok := strings.Cut(appName, "_"); ok {
		env.AppNamespace, env.AppName, env.qualified = ns, name, true
	} else {
		env.AppNamespace, env.AppName = strings.TrimSpace(getenv(EnvArgoCDNamespace)), appName
	}

	clusterFrom := EnvCluster
	if env.Cluster == "" {
		env.Cluster, clusterFrom = strings.TrimSpace(getenv(EnvAppNamespace)), EnvAppNamespace+" (the destination namespace)"
	}
	if env.Cluster == "" {
		return Environment{}, fmt.Errorf("no target cluster: set the Application's spec.destination.namespace to the cluster's namespace on the hub, or the plugin env CLUSTER (%s)", EnvCluster)
	}
	if errs := validation.IsDNS1123Label(env.Cluster); len(errs) > 0 {
		return Environment{}, fmt.Errorf("target cluster %q from %s is not a cluster name (%s)", env.Cluster, clusterFrom, strings.Join(errs, "; "))
	}
	if env.Namespace != "" {
		if errs := validation.IsDNS1123Label(env.Namespace); len(errs) > 0 {
			return Environment{}, fmt.Errorf("plugin env NAMESPACE (%s) %q is not a namespace name (%s)", EnvNamespace, env.Namespace, strings.Join(errs, "; "))
		}
	}
	for _, f := range strings.Split(getenv(EnvHelmValues), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		// helm template fetches a URL and reads any path: either would let an
		// Application's author feed the hub's repo-server files or requests beyond the
		// repository Argo CD checked out for it.
		if strings.Contains(f, "://") || filepath.IsAbs(f) {
			return Environment{}, fmt.Errorf("plugin env HELM_VALUES (%s) entry %q is not a path inside the repository: "+
				"name values files relative to the source path, with no URL or absolute path", EnvHelmValues, f)
		}
		env.HelmValues = append(env.HelmValues, f)
	}
	env.SourcePath = strings.TrimSpace(getenv(EnvAppSourcePath))
	return env, nil
}

const (
	maxWorkNameLength = validation.DNS1123SubdomainMaxLength
	nameHashLength    = 10
)

// WorkName is the ManifestWork's name: the Application's name, prefixed with
// "<namespace>." for an Application outside Argo CD's namespace (a namespace holds no
// dot, so the pair is unambiguous), shortened with a stable hash when longer than an
// object name may be. A pull-model work of an Application with the same name is
// "<name>-<uid prefix>", so the two never collide.
func (e Environment) WorkName() string {
	name := e.AppName
	if e.qualified {
		name = e.AppNamespace + "." + e.AppName
	}
	return naming.Bounded(name, maxWorkNameLength, nameHashLength)
}
