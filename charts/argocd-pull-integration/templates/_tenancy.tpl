{{/* Argo CD's namespace on the hub: tenancy.argocdNamespace, else the release's. */}}
{{- define "argocd-pull-integration.argocdNamespace" -}}
{{- default .Release.Namespace .Values.tenancy.argocdNamespace -}}
{{- end -}}

{{/* The manager's flags of the tenancy checks (README, "Who can deliver where"). */}}
{{- define "argocd-pull-integration.tenancyArgs" -}}
- --argocd-namespace={{ include "argocd-pull-integration.argocdNamespace" . }}
- --check-application-namespaces={{ .Values.tenancy.checkApplicationNamespaces }}
- --check-projects={{ .Values.tenancy.checkProjects }}
- --check-cluster-set-bindings={{ .Values.tenancy.checkClusterSetBindings }}
{{- with .Values.tenancy.applicationNamespaces }}
- --application-namespaces={{ join "," . }}
{{- end }}
{{- end -}}
