{{/* The Argo CD namespaces the manager may write Secrets, ConfigMaps and RBAC in
(rbac.argoNamespaces; empty: the release namespace), as a list. */}}
{{- define "argocd-pull-integration.argoNamespaces" -}}
{{- $namespaces := .Values.rbac.argoNamespaces | default (list .Release.Namespace) -}}
{{- toJson (uniq $namespaces) -}}
{{- end -}}

{{/* Manager arguments that scope what it writes to the chart's RBAC. */}}
{{- define "argocd-pull-integration.rbacArgs" -}}
- --gitopscluster-argocd-namespaces={{ include "argocd-pull-integration.argoNamespaces" . | fromJsonArray | join "," }}
- --applicationset-controller-service-account={{ required "rbac.applicationSetControllerServiceAccount must name a ServiceAccount" .Values.rbac.applicationSetControllerServiceAccount }}
{{- end -}}
