{{/* Base name of every object: the release name when it already says crd-scheduler. */}}
{{- define "crd-scheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "crd-scheduler.fullname" -}}
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

{{/* The namespace of the cluster-wide profiles and of the Lease. */}}
{{- define "crd-scheduler.homeNamespace" -}}
{{- default .Release.Namespace .Values.homeNamespace }}
{{- end }}

{{- define "crd-scheduler.leaseName" -}}
{{- default "crd-scheduler" .Values.leaderElection.leaseName }}
{{- end }}

{{/* Labels of manifests/ plus Helm's. */}}
{{- define "crd-scheduler.labels" -}}
app.kubernetes.io/name: {{ include "crd-scheduler.name" . }}
app.kubernetes.io/part-of: crd-scheduler
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The operator's pods: one release's replicas, and no one else's. */}}
{{- define "crd-scheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "crd-scheduler.name" . }}
app.kubernetes.io/component: scheduler
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "crd-scheduler.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "crd-scheduler.webhookName" -}}
{{- printf "%s-webhook" (include "crd-scheduler.fullname" .) }}
{{- end }}
