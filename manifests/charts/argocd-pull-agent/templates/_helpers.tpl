{{/* Name of the agent's Deployment, ServiceAccount and namespaced RBAC. */}}
{{- define "argocd-pull-agent.name" -}}
argocd-pull-agent
{{- end -}}

{{/* Prefix of the agent's cluster-scoped RBAC, unique to this addon on a managed cluster. */}}
{{- define "argocd-pull-agent.clusterRoleName" -}}
open-cluster-management:argocd-pull:agent
{{- end -}}

{{- define "argocd-pull-agent.selectorLabels" -}}
app.kubernetes.io/name: argocd-pull-agent
app.kubernetes.io/component: agent
{{- end -}}

{{- define "argocd-pull-agent.labels" -}}
{{ include "argocd-pull-agent.selectorLabels" . }}
app.kubernetes.io/part-of: argocd-pull-addon
addon.open-cluster-management.io/name: argocd-pull
{{- end -}}
