{{/* The name of the controller's objects: the same as config/default's. */}}
{{- define "exporterset.name" -}}
{{- default "exporterset-controller" .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels: only what config/default uses, so the Deployment's selector matches it. */}}
{{- define "exporterset.selectorLabels" -}}
app.kubernetes.io/name: {{ include "exporterset.name" . }}
{{- end -}}

{{- define "exporterset.labels" -}}
{{ include "exporterset.selectorLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "exporterset.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
