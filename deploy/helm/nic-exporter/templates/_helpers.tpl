{{/* The chart's name, or nameOverride. */}}
{{- define "nic-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The objects' name: fullnameOverride, the release name when it
contains the chart's name, else release-chart. */}}
{{- define "nic-exporter.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The labels that select the pods. app.kubernetes.io/name follows
nameOverride; the ServiceMonitor's job label does not (serviceMonitor.job). */}}
{{- define "nic-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nic-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "nic-exporter.labels" -}}
{{ include "nic-exporter.selectorLabels" . }}
app.kubernetes.io/part-of: nic-exporter
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "nic-exporter.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* Whether the container runs as root: only when an opt-in needs a
capability, which a non-root container cannot use (Kubernetes sets no
ambient capabilities). */}}
{{- define "nic-exporter.root" -}}
{{- if or .Values.vma.enabled .Values.kernelLog.enabled .Values.devlinkCapture.enabled .Values.transceivers.enabled -}}true{{- end -}}
{{- end -}}

{{/* Whether the container is privileged: only the kernel-log opt-in
with access=privileged makes it so. */}}
{{- define "nic-exporter.privileged" -}}
{{- and .Values.kernelLog.enabled (eq .Values.kernelLog.access "privileged") -}}
{{- end -}}

{{/* The container's resources: the values', plus one unit of the kernel
log device's extended resource with kernelLog.access=device (a limit
alone: Kubernetes sets the request of an extended resource to its
limit). */}}
{{- define "nic-exporter.resources" -}}
{{- $r := deepCopy .Values.resources -}}
{{- if and .Values.kernelLog.enabled (eq .Values.kernelLog.access "device") -}}
{{- $limits := default (dict) $r.limits -}}
{{- $_ := set $limits .Values.kernelLog.deviceResource "1" -}}
{{- $_ := set $r "limits" $limits -}}
{{- end -}}
{{- toYaml $r -}}
{{- end -}}

{{/* The capabilities the opt-ins add, as a YAML list, each once:
devlinkCapture and transceivers both need NET_ADMIN. */}}
{{- define "nic-exporter.capabilities" -}}
{{- $caps := list -}}
{{- if .Values.vma.enabled -}}{{- $caps = concat $caps (list "DAC_OVERRIDE" "SYS_PTRACE") -}}{{- end -}}
{{- if .Values.kernelLog.enabled -}}{{- $caps = append $caps "SYSLOG" -}}{{- end -}}
{{- if or .Values.devlinkCapture.enabled .Values.transceivers.enabled -}}{{- $caps = append $caps "NET_ADMIN" -}}{{- end -}}
{{- toJson (uniq $caps) -}}
{{- end -}}

{{/* The exporter's arguments. The defaults give the kustomize base's. */}}
{{- define "nic-exporter.args" -}}
- --web.listen-address=:{{ .Values.port }}
- --log.format={{ .Values.log.format }}
{{- if ne .Values.log.level "info" }}
- --log.level={{ .Values.log.level }}
{{- end }}
- --path.sysfs=/host/sys
{{- range $name, $c := .Values.collectors }}
{{- if not $c.enabled }}
- --no-collector.{{ $name }}
{{- end }}
{{- range $flag, $value := $c.flags }}
- --collector.{{ $name }}.{{ $flag }}={{ $value }}
{{- end }}
{{- end }}
{{- if .Values.vma.enabled }}
- --collector.vma.stats-dir=/host/tmp
- --collector.applog.files=/host/var/log/vma/*.log
{{- end }}
{{- if and .Values.kernelLog.enabled .Values.kernelLog.stateDir }}
- --collector.kmsg.state-file=/var/lib/nic_exporter/kmsg.state
{{- end }}
{{- if .Values.devlinkCapture.enabled }}
- --collector.devlink.capture-dir=/var/lib/nic_exporter/captures
{{- end }}
{{- if .Values.webConfig.enabled }}
- --web.config.file=/etc/nic_exporter/web/web-config.yml
{{- end }}
{{- if .Values.nodeConditions.enabled }}
- --kubernetes.node-conditions
{{- with .Values.nodeConditions.taint }}
- --kubernetes.taint={{ . }}
{{- end }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . }}
{{- end }}
{{- end -}}

{{/* Values that contradict each other fail the rendering. */}}
{{- define "nic-exporter.validate" -}}
{{- if and .Values.vma.enabled (not .Values.collectors.vma.enabled) -}}
{{- fail "vma.enabled needs collectors.vma.enabled: it grants the vma collector's privileges" -}}
{{- end -}}
{{- if and .Values.kernelLog.enabled (not .Values.collectors.kmsg.enabled) -}}
{{- fail "kernelLog.enabled needs collectors.kmsg.enabled: it grants the kmsg collector's privileges" -}}
{{- end -}}
{{- if not (has .Values.kernelLog.access (list "device" "privileged")) -}}
{{- fail (printf "kernelLog.access is %q: want device (a device plugin hands out /dev/kmsg) or privileged" .Values.kernelLog.access) -}}
{{- end -}}
{{- if and (eq .Values.kernelLog.access "device") (not .Values.kernelLog.deviceResource) -}}
{{- fail "kernelLog.access=device needs kernelLog.deviceResource: the extended resource a device plugin advertises for /dev/kmsg" -}}
{{- end -}}
{{- if and .Values.devlinkCapture.enabled (not .Values.collectors.devlink.enabled) -}}
{{- fail "devlinkCapture.enabled needs collectors.devlink.enabled" -}}
{{- end -}}
{{- if and .Values.nodeConditions.taint (not .Values.nodeConditions.enabled) -}}
{{- fail "nodeConditions.taint needs nodeConditions.enabled: the taint follows the node conditions" -}}
{{- end -}}
{{- if and .Values.transceivers.enabled (not .Values.collectors.phy.enabled) -}}
{{- fail "transceivers.enabled needs collectors.phy.enabled: it grants the phy collector's module reads" -}}
{{- end -}}
{{- range $name, $c := .Values.collectors -}}
{{- if or (hasKey $c.flags "stats-dir") (hasKey $c.flags "files") (hasKey $c.flags "capture-dir") (hasKey $c.flags "path") (hasKey $c.flags "state-file") -}}
{{- fail (printf "collectors.%s.flags: paths on the node come from vma, kernelLog and devlinkCapture, which mount them" $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
