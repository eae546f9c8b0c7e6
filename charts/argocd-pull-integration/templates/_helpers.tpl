{{/* Name of the manager's ServiceAccount, Deployment and RBAC objects. */}}
{{- define "argocd-pull-integration.managerName" -}}
{{- printf "%s-manager" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "argocd-pull-integration.serviceAccountName" -}}
{{- default (include "argocd-pull-integration.managerName" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* The image of manager and agent. */}}
{{- define "argocd-pull-integration.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "argocd-pull-integration.labels" -}}
app.kubernetes.io/name: argocd-pull-integration
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "argocd-pull-integration.selectorLabels" -}}
app.kubernetes.io/name: argocd-pull-integration
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end -}}

{{/* Manager arguments that configure the agent the addon manager installs: the same image,
pulled with the same Secrets' names. */}}
{{- define "argocd-pull-integration.addonManagerArgs" -}}
- --agent-image={{ include "argocd-pull-integration.image" . }}
- --agent-image-pull-policy={{ .Values.image.pullPolicy }}
{{- with .Values.imagePullSecrets }}
- --agent-image-pull-secrets={{ range $i, $secret := . }}{{ if $i }},{{ end }}{{ $secret.name }}{{ end }}
{{- end }}
{{- end -}}

{{/* Name of the Service in front of the manager's metrics port. */}}
{{- define "argocd-pull-integration.metricsServiceName" -}}
{{- printf "%s-manager-metrics" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
