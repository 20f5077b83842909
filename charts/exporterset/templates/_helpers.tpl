{{/*
The release's full name, from which every object's name derives (cluster-scoped ones
included), so that releases can coexist: fullnameOverride, else <release>-controller when the
release name contains the chart's name (nameOverride, default "exporterset"), else
<release>-<name>-controller. Release "exporterset" gives "exporterset-controller", the name
config/default uses.
*/}}
{{- define "exporterset.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- $base := ternary .Release.Name (printf "%s-%s" .Release.Name $name) (contains $name .Release.Name) -}}
{{- printf "%s-controller" $base | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The objects' name: the full name. */}}
{{- define "exporterset.name" -}}
{{- include "exporterset.fullname" . -}}
{{- end -}}

{{/* The leader election Role and RoleBinding: "exporterset-leader-election" for release "exporterset". */}}
{{- define "exporterset.leaderElectionName" -}}
{{- printf "%s-leader-election" (include "exporterset.fullname" . | trimSuffix "-controller") | trunc 63 | trimSuffix "-" -}}
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
