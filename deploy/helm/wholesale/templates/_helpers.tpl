{{/* Names: <release>-wholesale unless the release already says wholesale. */}}
{{- define "wholesale.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "wholesale.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: wholesale
{{- end -}}

{{/* Selector labels of one component (api, worker, migrate). */}}
{{- define "wholesale.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "wholesale.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "wholesale.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "wholesale.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Whether the worker scales with KEDA: asked of the cluster under `auto`. */}}
{{- define "wholesale.keda" -}}
{{- $keda := .Values.worker.autoscaling.keda | toString -}}
{{- if and .Values.worker.autoscaling.enabled (or (eq $keda "true") (and (eq $keda "auto") (.Capabilities.APIVersions.Has "keda.sh/v1alpha1/ScaledObject"))) -}}
true
{{- end -}}
{{- end -}}

{{- define "wholesale.tlsDir" -}}/etc/wholesale/temporal-tls{{- end -}}

{{/*
The settings every process gets besides the Secret: `config`, then what the chart fixes (addresses,
ports, Temporal, migrations), as name: value pairs. The ConfigMap holds them; the migration Job,
which runs before the ConfigMap exists on a first install, gets them inline.
*/}}
{{- define "wholesale.settings" -}}
{{- $s := dict -}}
{{- range $name, $value := .Values.config -}}
{{- $_ := set $s $name (toString $value) -}}
{{- end -}}
{{- $_ := set $s "NODE_ENV" "production" -}}
{{- $_ := set $s "HOST" "0.0.0.0" -}}
{{- $_ := set $s "PORT" (toString .Values.ports.http) -}}
{{- $_ := set $s "METRICS_HOST" "0.0.0.0" -}}
{{- $_ := set $s "METRICS_PORT" (toString .Values.ports.metrics) -}}
{{- $_ := set $s "TEMPORAL_ADDRESS" .Values.temporal.address -}}
{{- $_ := set $s "TEMPORAL_NAMESPACE" .Values.temporal.namespace -}}
{{- $_ := set $s "TEMPORAL_TASK_QUEUE" .Values.temporal.taskQueue -}}
{{- $_ := set $s "MIGRATE_ON_START" (ternary "false" "true" .Values.migrations.job) -}}
{{- if .Values.temporal.allowPlaintext -}}
{{- $_ := set $s "TEMPORAL_ALLOW_PLAINTEXT" "true" -}}
{{- end -}}
{{- with .Values.temporal.tls -}}
{{- if .enabled -}}
{{- $_ := set $s "TEMPORAL_TLS" "true" -}}
{{- if .secretName -}}
{{- $_ := set $s "TEMPORAL_TLS_CA" (printf "%s/ca.crt" (include "wholesale.tlsDir" $)) -}}
{{- end -}}
{{- if .mtls -}}
{{- $_ := set $s "TEMPORAL_TLS_CERT" (printf "%s/tls.crt" (include "wholesale.tlsDir" $)) -}}
{{- $_ := set $s "TEMPORAL_TLS_KEY" (printf "%s/tls.key" (include "wholesale.tlsDir" $)) -}}
{{- end -}}
{{- if .serverName -}}
{{- $_ := set $s "TEMPORAL_TLS_SERVER_NAME" .serverName -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $s -}}
{{- end -}}

{{/*
The pod spec parts every process shares: account, security, TLS files, /tmp. Called with
(dict "root" . "serviceAccount" true|false): the migration Job runs before the release's
ServiceAccount exists on a first install, so it runs as the namespace's default one (the processes
never call the Kubernetes API, and no token is mounted either way).
*/}}
{{- define "wholesale.podCommon" -}}
{{- $v := .root.Values -}}
{{- if .serviceAccount }}
serviceAccountName: {{ include "wholesale.serviceAccountName" .root }}
{{- end }}
automountServiceAccountToken: false
securityContext:
  {{- toYaml $v.podSecurityContext | nindent 2 }}
{{- with $v.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  - name: tmp
    emptyDir: {}
  {{- if and $v.temporal.tls.enabled $v.temporal.tls.secretName }}
  - name: temporal-tls
    secret:
      secretName: {{ $v.temporal.tls.secretName }}
  {{- end }}
{{- end -}}

{{- define "wholesale.containerCommon" -}}
image: {{ include "wholesale.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
volumeMounts:
  - name: tmp
    mountPath: /tmp
  {{- if and .Values.temporal.tls.enabled .Values.temporal.tls.secretName }}
  - name: temporal-tls
    mountPath: {{ include "wholesale.tlsDir" . }}
    readOnly: true
  {{- end }}
{{- end -}}

{{- define "wholesale.envFrom" -}}
envFrom:
  - configMapRef:
      name: {{ include "wholesale.fullname" . }}
  - secretRef:
      name: {{ required "existingSecret: the Secret holding the service's secrets (see values.yaml)" .Values.existingSecret }}
{{- end -}}

{{/* Liveness on /healthz and readiness on /readyz, both on the metrics port. */}}
{{- define "wholesale.probes" -}}
startupProbe:
  httpGet: { path: /healthz, port: metrics }
  periodSeconds: 2
  failureThreshold: 60
livenessProbe:
  httpGet: { path: /healthz, port: metrics }
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
readinessProbe:
  httpGet: { path: /readyz, port: metrics }
  periodSeconds: 5
  timeoutSeconds: 3
  failureThreshold: 2
{{- end -}}
