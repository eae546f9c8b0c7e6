package propagation

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/open-cluster-management-io/argocd-pull-addon/pkg/apis/apps"
)

// Input rules of a marked Application. Bad input is the user's to fix: the controller
// reports it as an InvalidSpecError condition and a Warning Event on the Application,
// never as a reconcile error, and keeps the ManifestWork delivered before (checkInput).

// validateClusterAnnotation requires a non-empty target cluster annotation.
func validateClusterAnnotation(app *argov1alpha1.Application) error {
	v := strings.TrimSpace(app.GetAnnotations()[apps.AnnotationOCMManagedCluster])
	if v == "" {
		return fmt.Errorf("annotation %s is missing or empty: set it to the name of the ManagedCluster to deploy to", apps.AnnotationOCMManagedCluster)
	}
	if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
		return fmt.Errorf("annotation %s=%q is not a valid cluster name (%s): set it to the name of a ManagedCluster", apps.AnnotationOCMManagedCluster, v, strings.Join(errs, "; "))
	}
	return nil
}

// validateAppNamespace requires the optional spoke namespace annotation, when set, to be a namespace name.
func validateAppNamespace(app *argov1alpha1.Application) error {
	v, ok := app.GetAnnotations()[apps.AnnotationOCMManagedClusterAppNamespace]
	if !ok {
		return nil
	}
	if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
		return fmt.Errorf("annotation %s=%q is not a namespace name (%s): set it to the Argo CD namespace on the managed cluster, or remove it", apps.AnnotationOCMManagedClusterAppNamespace, v, strings.Join(errs, "; "))
	}
	return nil
}

// validateDestinationOverride requires at most one of the destination override
// annotations, a non-empty name, and an https URL with a host as server.
func validateDestinationOverride(app *argov1alpha1.Application) error {
	name, hasName := app.GetAnnotations()[apps.AnnotationDestinationName]
	server, hasServer := app.GetAnnotations()[apps.AnnotationDestinationServer]
	switch {
	case hasName && hasServer:
		return fmt.Errorf("annotations %s and %s are both set: keep only one", apps.AnnotationDestinationName, apps.AnnotationDestinationServer)
	case hasName && strings.TrimSpace(name) == "":
		return fmt.Errorf("annotation %s is empty: set it to an Argo CD cluster name on the managed cluster, or remove it", apps.AnnotationDestinationName)
	case hasServer:
		u, err := url.Parse(server)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("annotation %s=%q is not an https URL: set it to a URL like %s, or remove it", apps.AnnotationDestinationServer, server, defaultDestinationServer)
		}
	}
	return nil
}

// validate runs every input rule on a marked Application and joins their errors.
func validate(app *argov1alpha1.Application) error {
	return errors.Join(
		validateClusterAnnotation(app),
		validateAppNamespace(app),
		validateDestinationOverride(app),
	)
}
