{{/* Chart name, possibly overridden. */}}
{{- define "ocm-rollout.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name of the release's objects (names get a component suffix added, so keep room). */}}
{{- define "ocm-rollout.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "ocm-rollout.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels every object carries. */}}
{{- define "ocm-rollout.labels" -}}
helm.sh/chart: {{ include "ocm-rollout.chart" . }}
{{ include "ocm-rollout.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "ocm-rollout.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ocm-rollout.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "ocm-rollout.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
The Deployments to render, as YAML: components: [{name, suffix, controllers: [...]}].
single: one component "controllers" running every enabled controller;
perController: one component per enabled controller.
*/}}
{{- define "ocm-rollout.components" -}}
{{- $enabled := list }}
{{- range $name := list "placement" "workset" "addon" }}
{{- if (index $.Values.controllers $name).enabled }}
{{- $enabled = append $enabled $name }}
{{- end }}
{{- end }}
{{- if not $enabled }}
{{- fail "ocm-rollout: enable at least one controller (controllers.<name>.enabled)" }}
{{- end }}
{{- with .Values.leaderElection }}
{{- if .enabled }}
{{- if le (float64 .leaseDuration) (float64 .renewDeadline) }}
{{- fail "ocm-rollout: leaderElection.leaseDuration must be greater than leaderElection.renewDeadline" }}
{{- end }}
{{- if le (float64 .renewDeadline) (mulf 1.2 (float64 .retryPeriod)) }}
{{- fail "ocm-rollout: leaderElection.renewDeadline must be greater than 1.2 x leaderElection.retryPeriod" }}
{{- end }}
{{- end }}
{{- end }}
components:
{{- if eq .Values.deploymentMode "perController" }}
{{- range $name := $enabled }}
  - name: {{ $name }}
    suffix: {{ printf "-%s" $name | quote }}
    controllers: [{{ $name }}]
{{- end }}
{{- else }}
  - name: controllers
    suffix: ""
    controllers: [{{ join ", " $enabled }}]
{{- end }}
{{- end }}

{{/* The ServiceAccount name of a component: (dict "root" $ "component" $component). */}}
{{- define "ocm-rollout.serviceAccountName" -}}
{{- $root := .root }}
{{- $base := include "ocm-rollout.fullname" $root }}
{{- if $root.Values.serviceAccount.name }}
{{- $base = $root.Values.serviceAccount.name }}
{{- end }}
{{- printf "%s%s" $base .component.suffix | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Lease name of a component. */}}
{{- define "ocm-rollout.leaseName" -}}
{{- $root := .root }}
{{- $base := default (include "ocm-rollout.fullname" $root) $root.Values.leaderElection.leaseName }}
{{- printf "%s%s" $base .component.suffix | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Whether a component serves the placement debug endpoint. */}}
{{- define "ocm-rollout.servesDebug" -}}
{{- if and .root.Values.placementDebug.enabled (has "placement" .component.controllers) }}true{{ end }}
{{- end }}
