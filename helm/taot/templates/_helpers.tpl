{{/* Names and labels. */}}
{{- define "taot.name" -}}taot-planner{{- end -}}

{{- define "taot.fullname" -}}
{{- printf "%s-taot" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "taot.selectorLabels" -}}
app.kubernetes.io/name: {{ include "taot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "taot.labels" -}}
{{ include "taot.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
taot.dev/job: {{ required "job.id is required" .Values.job.id | quote }}
{{- end -}}

{{- define "taot.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "taot.tokenSecretName" -}}
{{- if .Values.token.create -}}{{ include "taot.fullname" . }}-token{{- else -}}{{ required "token.existingSecret is required when token.enabled and not token.create" .Values.token.existingSecret }}{{- end -}}
{{- end -}}

{{/* The daemon's container, shared by both forms of the sidecar and the Deployment. */}}
{{- define "taot.container" -}}
name: taot-planner
image: {{ include "taot.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
args:
  - --config=/etc/taot/config.toml
  {{- if .Values.token.enabled }}
  - --token-file=/etc/taot/token/{{ .Values.token.key }}
  {{- end }}
  {{- if .Values.tls.enabled }}
  - --tls-cert=/etc/taot/tls/tls.crt
  - --tls-key=/etc/taot/tls/tls.key
  {{- if .Values.tls.clientCA }}
  - --tls-client-ca=/etc/taot/tls/ca.crt
  {{- end }}
  {{- end }}
  {{- range .Values.extraArgs }}
  - {{ . | quote }}
  {{- end }}
ports:
  - name: taot-grpc
    containerPort: {{ .Values.ports.grpc }}
  - name: taot-metrics
    containerPort: {{ .Values.ports.metrics }}
{{- /* Kubernetes' gRPC probes speak plaintext; with TLS the probes check the port opens. */}}
{{- $probe := dict "grpc" (dict "port" .Values.ports.grpc) }}
{{- if .Values.tls.enabled }}{{ $probe = dict "tcpSocket" (dict "port" "taot-grpc") }}{{ end }}
startupProbe:
  {{- toYaml $probe | nindent 2 }}
  periodSeconds: {{ .Values.probes.startup.periodSeconds }}
  failureThreshold: {{ .Values.probes.startup.failureThreshold }}
livenessProbe:
  {{- toYaml $probe | nindent 2 }}
  periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
  failureThreshold: {{ .Values.probes.liveness.failureThreshold }}
readinessProbe:
  {{- toYaml $probe | nindent 2 }}
  periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
  failureThreshold: {{ .Values.probes.readiness.failureThreshold }}
resources:
  {{- toYaml .Values.resources | nindent 2 }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
volumeMounts:
  - name: taot-config
    mountPath: /etc/taot
    readOnly: true
  {{- if .Values.token.enabled }}
  - name: taot-token
    mountPath: /etc/taot/token
    readOnly: true
  {{- end }}
  {{- if .Values.tls.enabled }}
  - name: taot-tls
    mountPath: /etc/taot/tls
    readOnly: true
  {{- end }}
{{- end -}}

{{/*
The sidecar for a training pod's `containers` (any Kubernetes version):
  containers:
    {{- include "taot.sidecar" .Subcharts.taot | nindent 4 }}
*/}}
{{- define "taot.sidecar" -}}
- {{- include "taot.container" . | nindent 2 }}
{{- end -}}

{{/*
The native sidecar (Kubernetes 1.29+): an init container with restartPolicy Always, started
before the trainer and stopped after it:
  initContainers:
    {{- include "taot.nativeSidecar" .Subcharts.taot | nindent 4 }}
*/}}
{{- define "taot.nativeSidecar" -}}
- {{- include "taot.container" . | nindent 2 }}
  restartPolicy: Always
{{- end -}}

{{/* The volumes the sidecar mounts, for the training pod's `volumes`. */}}
{{- define "taot.volumes" -}}
- name: taot-config
  configMap:
    name: {{ include "taot.fullname" . }}-config
{{- if .Values.token.enabled }}
- name: taot-token
  secret:
    secretName: {{ include "taot.tokenSecretName" . }}
{{- end }}
{{- if .Values.tls.enabled }}
- name: taot-tls
  secret:
    secretName: {{ required "tls.secretName is required when tls.enabled" .Values.tls.secretName }}
{{- end }}
{{- end -}}

{{/* The labels a training pod carries so that the PodMonitor finds its sidecar. */}}
{{- define "taot.podLabels" -}}
{{ include "taot.selectorLabels" . }}
{{- end -}}
