{{- define "initagent.name" -}}{{ .Release.Name }}{{- end }}

{{- define "initagent.targets" -}}
{{- if .Values.targets }}{{ join "," .Values.targets }}{{ else }}host{{ end }}
{{- end }}

{{- define "initagent.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "initagent.name" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "initagent.labels" -}}
app.kubernetes.io/name: kcp-init-agent
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "initagent.imagePullSecrets" -}}
{{- range .Values.imagePullSecrets }}
{{- if kindIs "map" . }}
- {{ toYaml . | trim }}
{{- else }}
- name: {{ . }}
{{- end }}
{{- end }}
{{- end }}
