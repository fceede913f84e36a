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

{{/*
Whether a component serves the add-on kinds' conversion webhook: the one running the add-on
manager, or the first one when the add-on manager is disabled (the CRDs still need it).
*/}}
{{- define "ocm-rollout.servesWebhook" -}}
{{- $components := (include "ocm-rollout.components" .root | fromYaml).components }}
{{- $host := index $components 0 }}
{{- range $c := $components }}
{{- if has "addon" $c.controllers }}{{ $host = $c }}{{ end }}
{{- end }}
{{- if eq $host.name .component.name }}true{{ end }}
{{- end }}

{{/* The conversion webhook's Service, Secret and Certificate name. */}}
{{- define "ocm-rollout.webhookName" -}}
{{- printf "%s-webhook" (include "ocm-rollout.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The host of conversionWebhook.url (empty without one), as (dict "ips" [...] "dns" [...]): an IP
address or a DNS name the webhook's certificate must also name.
*/}}
{{- define "ocm-rollout.webhookUrlHost" -}}
{{- $ips := list }}
{{- $dns := list }}
{{- with .Values.conversionWebhook.url }}
{{- $host := (urlParse .).hostname }}
{{- if regexMatch "^[0-9]+(\\.[0-9]+){3}$|:" $host }}
{{- $ips = append $ips $host }}
{{- else }}
{{- $dns = append $dns $host }}
{{- end }}
{{- end }}
{{- toYaml (dict "ips" $ips "dns" $dns) }}
{{- end }}

{{/*
The webhook's serving certificate without cert-manager, as a dict (ca.crt, tls.crt, tls.key):
the Secret already installed when there is one for the same conversionWebhook.url host (an
upgrade keeps its CA, so the CRDs' caBundle stays valid), else a new CA (10 years) and a
certificate for the Service's DNS names and the url's host. The Secret records that host in the
annotation ocm-rollout.open-cluster-management.io/webhook-url-host (absent: none).
*/}}
{{- define "ocm-rollout.webhookCertificate" -}}
{{- $name := include "ocm-rollout.webhookName" . }}
{{- $urlHost := include "ocm-rollout.webhookUrlHost" . | fromYaml }}
{{- $hostKey := join "," (concat $urlHost.ips $urlHost.dns) }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (printf "%s-tls" $name) }}
{{- $existingHost := "" }}
{{- if $existing }}
{{- $existingHost = index ($existing.metadata.annotations | default dict) "ocm-rollout.open-cluster-management.io/webhook-url-host" | default "" }}
{{- end }}
{{- if and $existing (index ($existing.data | default dict) "ca.crt") (eq $existingHost $hostKey) }}
ca.crt: {{ index $existing.data "ca.crt" }}
tls.crt: {{ index $existing.data "tls.crt" }}
tls.key: {{ index $existing.data "tls.key" }}
{{- else }}
{{- $ca := genCA (printf "%s-ca" $name) 3650 }}
{{- $dns := concat (list $name (printf "%s.%s" $name .Release.Namespace) (printf "%s.%s.svc" $name .Release.Namespace) (printf "%s.%s.svc.cluster.local" $name .Release.Namespace)) $urlHost.dns }}
{{- $cert := genSignedCert $name $urlHost.ips $dns 3650 $ca }}
ca.crt: {{ $ca.Cert | b64enc }}
tls.crt: {{ $cert.Cert | b64enc }}
tls.key: {{ $cert.Key | b64enc }}
{{- end }}
urlHost: {{ $hostKey | quote }}
{{- end }}

{{/*
The work configuration file (config.yaml of the work-controller-config ConfigMap): the
workConfig lists that are not empty. Its sha256 is the pod template's checksum/work-config.
*/}}
{{- define "ocm-rollout.workConfig" -}}
{{- $config := dict }}
{{- with .Values.workConfig.plugins }}{{ $_ := set $config "plugins" . }}{{ end }}
{{- with .Values.workConfig.metricProviders }}{{ $_ := set $config "metricProviders" . }}{{ end }}
{{- if $config }}{{ toYaml $config }}{{ end }}
{{- end }}

{{/* Whether a component reads the work configuration: it runs the workset or addon controller. */}}
{{- define "ocm-rollout.readsWorkConfig" -}}
{{- if or (has "workset" .component.controllers) (has "addon" .component.controllers) }}true{{ end }}
{{- end }}

{{/* Where the work configuration is mounted, and the file `ocm-rollout run --work-config` reads. */}}
{{- define "ocm-rollout.workConfigDir" -}}/var/run/config/work{{- end }}

{{/* The dashboard's Deployment, ClusterRole and ClusterRoleBinding name. */}}
{{- define "ocm-rollout.dashboardName" -}}
{{- printf "%s-dashboard" (include "ocm-rollout.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The dashboard's ServiceAccount: serviceAccount.name (else the full name) suffixed -dashboard. */}}
{{- define "ocm-rollout.dashboardServiceAccountName" -}}
{{- include "ocm-rollout.serviceAccountName" (dict "root" . "component" (dict "suffix" "-dashboard")) }}
{{- end }}
