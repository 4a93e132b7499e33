{{- define "syncagent.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "syncagent.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "syncagent.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{- define "syncagent.agentName" -}}
{{- default .Release.Name .Values.agentName }}
{{- end }}

{{- define "syncagent.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "syncagent.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "syncagent.labels" -}}
app.kubernetes.io/name: {{ include "syncagent.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.extraLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "syncagent.selector" -}}
app.kubernetes.io/name: {{ include "syncagent.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
