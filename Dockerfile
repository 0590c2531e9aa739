# Multi-stage build of a static nic_exporter binary.
#
#   docker build -t nic_exporter .
#   docker run --rm --net=host --pid=host \
#     -v /sys:/host/sys:ro -v /tmp:/host/tmp --device /dev/kmsg \
#     --cap-drop=ALL --cap-add=NET_ADMIN --cap-add=SYSLOG \
#     --cap-add=DAC_OVERRIDE --cap-add=SYS_PTRACE \
#     nic_exporter --path.sysfs=/host/sys --collector.vma.stats-dir=/host/tmp
#
# /tmp is mounted read-write: the VMA collector increments reader_counter
# in each vmastat file, or libvma stops refreshing it. The Kubernetes
# DaemonSet (deploy/kubernetes) runs the same image with the same flags.
#
# Capabilities, by collector (see README "Required privileges"):
#   NET_ADMIN  devlink health diagnose/dump (evidence capture) and dumps
#              that the kernel restricts to admins
#   SYSLOG     reading /dev/kmsg when kernel.dmesg_restrict=1
#   DAC_OVERRIDE, SYS_PTRACE  VMA statistics files of other users' processes
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/prometheus/common/version.Version=${VERSION}" \
      -o /out/nic_exporter ./cmd/nic_exporter

# Runs as root inside the container; give it only the capabilities above.
FROM gcr.io/distroless/static-debian12
COPY --from=build /out/nic_exporter /bin/nic_exporter
EXPOSE 21180
ENTRYPOINT ["/bin/nic_exporter"]
