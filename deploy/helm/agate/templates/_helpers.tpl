{{/* The chart's name, at most 63 characters. */}}
{{- define "agate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the release name, with the chart's name unless it holds it. */}}
{{- define "agate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "agate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "agate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "agate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "agate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "agate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "agate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The data of the Secret the chart makes: secrets, and the database URLs given inline. */}}
{{- define "agate.secretData" -}}
{{- $data := dict }}
{{- range $k, $v := .Values.secrets }}
{{- $_ := set $data $k $v }}
{{- end }}
{{- if and .Values.redis.enabled .Values.redis.url (not .Values.redis.urlSecret.name) }}
{{- $_ := set $data "GATEWAY_STATE__URL" .Values.redis.url }}
{{- end }}
{{- if and .Values.postgres.enabled .Values.postgres.url (not .Values.postgres.urlSecret.name) }}
{{- $_ := set $data "GATEWAY_LEDGER__URL" .Values.postgres.url }}
{{- end }}
{{- toYaml $data }}
{{- end }}

{{/* Whether the chart makes a Secret: "true" or "". */}}
{{- define "agate.makesSecret" -}}
{{- if ne (include "agate.secretData" .) "{}" }}true{{ end }}
{{- end }}
