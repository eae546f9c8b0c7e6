{{/* Name of the manager's ServiceAccount, Deployment and RBAC objects. */}}
{{- define "argocd-pull-integration.managerName" -}}
{{- printf "%s-manager" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "argocd-pull-integration.serviceAccountName" -}}
{{- default (include "argocd-pull-integration.managerName" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/*
GOMEMLIMIT for a container memory limit (a Kubernetes quantity such as 1Gi, 512Mi,
1000M or bytes): 90 % of it in MiB, leaving the rest for what Go's soft limit does not
count (goroutine stacks outside the heap, the runtime's own memory, page cache). Empty
when there is no limit.
*/}}
{{- define "argocd-pull-integration.goMemLimit" -}}
{{- with . -}}
{{- $q := toString . -}}
{{- $m := regexFind "^[0-9]+(\\.[0-9]+)?" $q -}}
{{- if not $m -}}{{- fail (printf "manager.resources.limits.memory %q is not a quantity" $q) -}}{{- end -}}
{{- $unit := trimPrefix $m $q -}}
{{- $factors := dict "" 1 "k" 1000 "K" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 -}}
{{- if not (hasKey $factors $unit) -}}{{- fail (printf "manager.resources.limits.memory %q: unit %q is not one of k, M, G, T, Ki, Mi, Gi, Ti" $q $unit) -}}{{- end -}}
{{- printf "%dMiB" (int (floor (divf (mulf (float64 $m) (get $factors $unit) 0.9) 1048576))) -}}
{{- end -}}
{{- end -}}

{{/* The image of manager and agent. */}}
{{- define "argocd-pull-integration.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Helm's standard labels, on every object the chart renders. */}}
{{- define "argocd-pull-integration.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
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
- --agent-report-quota={{ .Values.security.agentReportQuota }}
{{- with .Values.imagePullSecrets }}
- --agent-image-pull-secrets={{ range $i, $secret := . }}{{ if $i }},{{ end }}{{ $secret.name }}{{ end }}
{{- end }}
{{- end -}}

{{/* Name of the Service in front of the manager's metrics port. */}}
{{- define "argocd-pull-integration.metricsServiceName" -}}
{{- printf "%s-manager-metrics" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels that select the manager's metrics Service (and only it). */}}
{{- define "argocd-pull-integration.metricsSelectorLabels" -}}
app.kubernetes.io/name: argocd-pull-integration
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager-metrics
{{- end -}}
