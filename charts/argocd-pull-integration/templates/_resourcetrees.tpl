{{/* The manager's flags of the resource trees it writes into the hub Argo CD's Redis (docs/argocd-ui.md). */}}
{{- define "argocd-pull-integration.resourceTreeArgs" -}}
- --resource-trees={{ .Values.resourceTrees.enabled }}
{{- if .Values.resourceTrees.enabled }}
{{- with .Values.resourceTrees.redis.address }}
- --argocd-redis-address={{ . }}
{{- end }}
- --argocd-redis-secret={{ .Values.resourceTrees.redis.secret }}
- --argocd-redis-compression={{ .Values.resourceTrees.redis.compression }}
{{- end }}
{{- end -}}
